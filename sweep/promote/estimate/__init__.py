"""Estimating the full run: its target and cluster (presets or files), the parameter and FLOP counts, one GPU's
memory, a step's time, and the layout search that weighs them. Reads only the target's ModelShape."""
