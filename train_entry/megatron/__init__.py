"""The full-run entry: megatron-core training of a promotion plan on GPUs (torchrun or Ray Train workers)."""
