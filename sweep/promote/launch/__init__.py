"""Launching and tracking the full run: a promotion carried out (the plan written, then submitted or rehearsed), the
job's submission to a Ray cluster, its records, the local rehearsal, and watching its evaluations."""
