"""The loss law: its forms, the table of observations it is fitted to, the fit, the optimum at a target under the
pick's rule, its prediction and validation; used by a ladder (sweep.ladder) and by `sweep law fit` alike."""
