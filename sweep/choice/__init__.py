"""The choice: the observed optimum, the feasibility-and-ranking rule, the surrogate, the pick and best.json."""
