"""Writing the plan: the promoted point at the target's scale (schedule, data blend, layout, predictions), its
Megatron arguments and launch script, its summary, and the compute rate calibrated on a local GPU."""
