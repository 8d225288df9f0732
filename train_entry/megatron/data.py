"""The full run's training and validation samples: the plan's blend through megatron-core's GPTDataset.

The blend is built by the same BlendedMegatronDatasetBuilder and GPTDataset the proxy trials use
(train_entry.data.blend), from the weights the sweep chose, so a mix ratio means the same thing at
both scales. The validation sets are built apart, one GPTDataset per set as Megatron-LM builds them under
--multiple-validation-sets (megatron-core's blend_per_split, multiple_validation_sets); the training prefixes are
then read whole, as --train-data-path reads them. Samples are consumed in a fixed order: global batch i holds samples
[i * global_batch_size, (i + 1) * global_batch_size), so a resumed run picks up at the sample after
the last one trained on.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from megatron.core.datasets.blended_megatron_dataset_builder import BlendedMegatronDatasetBuilder
from megatron.core.datasets.gpt_dataset import GPTDataset, GPTDatasetConfig
from torch.utils.data import DataLoader, Dataset

from train_entry.data.tokenizer import megatron_tokenizer
from train_entry.megatron.config import FullRunConfig, RunConfigError

Sample = dict[str, torch.Tensor]


@dataclass(frozen=True)
class RunDatasets:
    train: Dataset | None
    """train_iters x global_batch_size samples; None on ranks that read no data (middle pipeline stages)."""
    valid: list[Dataset]
    """Per validation set, in data.valid's order: eval_iters x global_batch_size fixed held-out samples (a set
    shorter than that repeats); empty without evaluation or on such ranks."""


def build_datasets(config: FullRunConfig, *, built_on_this_rank: bool) -> RunDatasets:
    """The blend's train and valid splits, each index built once and cached for every rank.

    Every rank must call this (megatron-core builds the index on rank 0 while the others wait at
    a barrier); only ranks with built_on_this_rank get datasets back.
    """
    tokenizer = megatron_tokenizer(Path(config.data.tokenizer))
    if tokenizer.vocab_size > config.model.vocab_size:
        raise RunConfigError(
            f"data.tokenizer {config.data.tokenizer!r} has {tokenizer.vocab_size} tokens, more than the "
            f"model's model.vocab_size={config.model.vocab_size} embedding rows"
        )
    batch = config.parallelism.global_batch_size
    valid_samples = config.eval_iters * batch if config.eval_interval is not None else 0
    data = config.data
    blend = ([source.prefix for source in data.blend], [source.weight for source in data.blend])
    if data.valid:
        # Several sets: megatron-core builds a list of datasets for the valid split, not one blend of them.
        valid_blend = ([item.prefix for item in data.valid], None) if valid_samples else None
        splits: dict[str, Any] = {
            "blend_per_split": [blend, valid_blend, None],
            "multiple_validation_sets": True,
            "full_validation": False,
        }
    else:
        splits = {"blend": blend, "split": data.split}
    dataset_config = GPTDatasetConfig(
        random_seed=data.seed,
        sequence_length=config.model.seq_length,
        **splits,
        path_to_cache=data.cache_dir,
        tokenizer=tokenizer,
        reset_position_ids=False,
        reset_attention_mask=False,
        eod_mask_loss=False,
        # Causal attention needs no explicit mask: flash and megatron-core's attention build it.
        create_attention_mask=False,
    )
    train, valid, _ = BlendedMegatronDatasetBuilder(
        GPTDataset,
        [config.optimization.train_iters * batch, valid_samples, 0],
        lambda: built_on_this_rank,
        dataset_config,
    ).build()
    return RunDatasets(train=train, valid=list(valid) if valid_samples and built_on_this_rank else [])


class DataParallelMicroBatches:
    """Index lists of one data-parallel rank's micro-batches, in training order, from `consumed` on.

    Each global batch of micro_batch_size x data_parallel_size x num_microbatches samples is cut
    into consecutive slices of micro_batch_size x data_parallel_size; rank r takes the r-th
    micro_batch_size samples of each slice, as Megatron's pretraining sampler does.
    """

    def __init__(self, *, total: int, consumed: int, micro_batch_size: int, rank: int, size: int) -> None:
        if not 0 <= rank < size:
            raise ValueError(f"data-parallel rank must lie in [0, {size}), got {rank=}")
        if consumed % (micro_batch_size * size):
            raise ValueError(
                f"consumed samples must be whole slices of micro_batch_size x data-parallel size "
                f"= {micro_batch_size * size}, got {consumed=}"
            )
        self.total, self.consumed = total, consumed
        self.micro_batch_size, self.rank, self.size = micro_batch_size, rank, size

    def __len__(self) -> int:
        return (self.total - self.consumed) // (self.micro_batch_size * self.size)

    def __iter__(self) -> Iterator[list[int]]:
        step = self.micro_batch_size * self.size
        for start in range(self.consumed, self.consumed + len(self) * step, step):
            first = start + self.rank * self.micro_batch_size
            yield list(range(first, first + self.micro_batch_size))


def micro_batches(
    dataset: Dataset, *, consumed: int, micro_batch_size: int, rank: int, size: int, num_workers: int
) -> Iterator[Sample]:
    """This rank's micro-batches of `dataset` from sample `consumed` on, read by DataLoader workers."""
    sampler = DataParallelMicroBatches(
        total=len(dataset), consumed=consumed, micro_batch_size=micro_batch_size, rank=rank, size=size
    )
    loader = DataLoader(
        dataset,
        batch_sampler=sampler,
        num_workers=num_workers,
        pin_memory=torch.cuda.is_available(),
        persistent_workers=num_workers > 0,
    )
    return iter(loader)


def to_device(sample: dict[str, Any], device: torch.device) -> Sample:
    """The tensors the model step uses, on `device` (the loader also yields ones it does not need)."""
    return {key: sample[key].to(device, non_blocking=True) for key in ("tokens", "labels", "loss_mask", "position_ids")}
