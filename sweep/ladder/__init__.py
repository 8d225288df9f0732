"""The proxy ladder: the same fixed design at several matched proxy sizes (the spec's `ladder:` section, config and
rungs), its driver and record, and the continued-pretraining loss law fitted over every rung (law*.py)."""
