"""What runs inside a trial or a full-run worker. Knows nothing of Ray or Optuna."""

import warnings

# megatron-core warns on import that it falls back to PyTorch kernels without Transformer Engine
# and Apex; only its datasets and configs are used on that path, where the fallback is irrelevant.
warnings.filterwarnings("ignore", message="Transformer Engine and Apex are not installed")
