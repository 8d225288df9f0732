"""A proxy trial larger than one GPU: the model sharded over the trial's workers with FSDP2 (`fsdp`), the trial
run on each of them (`trial`), its checkpoint for a retry to resume from (`checkpoint`), and how many GPUs a trial
of a given base needs (`memory`)."""
