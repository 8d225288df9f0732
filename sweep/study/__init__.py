"""The study: the Optuna study every trial reports into, where it is stored, its records and rows, the searcher,
pruning and its forecast, sampling, seed replicates and the trials table."""
