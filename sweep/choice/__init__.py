"""The choice: the feasibility-and-ranking rule, the best observed trial, the surrogate, the pick, the points re-run
at other seeds (replicates) and best.json.

One vocabulary (docs/concepts.md): the sweep *observes* a best observed trial, *picks* a point (on the
surrogate, else the best observed trial's), a confirmation re-runs the pick, and promotion takes the
*promoted point* (sweep/promote/point/point.py)."""
