"""The proxy ladder: the same fixed design at several matched proxy sizes (the spec's `ladder:` section, config and
rungs), its driver and record, and the reading of its study into the loss law's table (law_study.py); the law itself
is sweep.law."""
