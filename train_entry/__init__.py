"""What runs inside a trial or a full-run worker. Knows nothing of Ray or Optuna."""
