"""The study: the Optuna study every trial reports into, its settings (sampler, pruner, budget, the pick rule) and
stored plan, opening its storage, its records and rows, pruning and its forecast, sampling and the trials table."""
