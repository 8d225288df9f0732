"""Choosing the promoted point: the sweep's pick or best observed trial from its run directory (checked against the
study it names), or a ladder's law optimum at the target."""
