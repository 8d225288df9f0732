"""Promotion: the sweep's optimum as the full run's plan for a target (sweep.target), then its launch, in rooms by
job, each importing only the rooms below it (tests/test_layers.py): estimate/ (the full run's memory, step time and
layout on a cluster), request/ (what a promotion asks for), point/ (choosing the promoted point), plan/ (writing the
plan and its files), launch/ (submitting, rehearsing and watching the job)."""
