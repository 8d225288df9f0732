"""The target: the model a full run trains (its family's reading of a config.json, or a preset, or a target YAML
file), its scale as the loss law sees it, and the full run's schedule. The law, the ladder, promotion and the CLI
reach the target only here (tests/test_layers.py)."""
