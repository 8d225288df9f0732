"""Promotion: choosing the promoted point (point.py), turning it into the full-run plan (plan.py),
submitting that plan to a Ray cluster, rehearsing it."""
