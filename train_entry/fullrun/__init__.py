"""The full run as a Ray job: a Ray Train TorchTrainer whose workers run the megatron-core entry (or, in a
rehearsal, the proxy model under DDP), with the rank-to-node check, checkpoints and restore.

The one part of train_entry that imports Ray, as a Ray Train worker must; the trainers it runs
(train_entry.megatron, fullrun.toy) still know nothing of it."""
