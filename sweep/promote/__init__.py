"""Promotion: turning the sweep's optimum into the full-run plan, submitting it to a Ray cluster, rehearsing it."""
