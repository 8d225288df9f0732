"""Model families: how a Hugging Face config.json of each architecture reads into the planner's ModelShape, and each
family's presets.

A family is one module here holding a `FAMILY` (family.Family): the config.json model_types it reads, the typed
keys it reads them with, the function from them to a ModelShape, and its named targets. The estimators (counts,
memory, step time, layout search, megatron-core config, Megatron-LM flags) read only the ModelShape, so a further
family is one more module and one more entry in registry.FAMILIES (docs/full-run.md, "Another family"; the rule is
tested by adding made-up families to a copy of the project).
"""
