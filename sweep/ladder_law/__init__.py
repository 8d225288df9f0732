"""The continued-pretraining loss law: fitted over every evaluation of every trial of every rung, predicting a target's optimum."""
