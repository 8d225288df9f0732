"""The orchestrator: the spec, the Ray Tune sweep over proxy trials, selection and promotion."""
