"""The proxy ladder: the same search at several proxy sizes (the spec's `ladder:` section), its rungs, its record,
and how its optimum moves with size."""
