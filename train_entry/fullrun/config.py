"""What the full-run job reads (job.json): how many workers, where, how they checkpoint, and what they train.

Written by `sweep promote submit | rehearse` from the plan; plain data that round-trips to JSON.
It holds no secrets: those reach the workers through the job's runtime environment only.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field, model_validator

from train_entry.config import Seed, StrictConfig
from train_entry.fullrun.evaluations import WatchConfig
from train_entry.optimizer import OptimizerConfig
from train_entry.trial_config import CorpusPrefixes

JOB_JSON = "job.json"
"""The job's config in the folder Ray uploads as its working_dir: `python -m train_entry.fullrun.job --config job.json`."""
RESULT_JSON = "result.json"
"""What the job writes beside Ray Train's run state when it ends."""
STOPPED_KEY = "stopped_by_watch"
"""The metric rank 0 reports with its last checkpoint when the forgetting watch stopped the run: the reason."""
STOPPED_EXIT_CODE = 3
"""The job's exit code after the forgetting watch stopped it: Ray records the job FAILED with the last log lines,
the reason among them, as its status message."""
LOG_PREFIX = "fullrun:"
"""Starts every line the workers print, so the job log is easy to follow and to parse."""


class MegatronTrainer(StrictConfig):
    """The megatron-core full-run entry (train_entry.megatron), on CUDA GPUs."""

    kind: Literal["megatron"] = "megatron"
    run: dict[str, Any]
    """The plan's FullRunConfig as JSON; validated on the workers, where train_entry.megatron is importable."""


class ToyTrainer(OptimizerConfig):
    """The proxy model under DDP on CPU (gloo): what a rehearsal trains in place of the megatron entry,
    with the proxy's optimizer recipe."""

    kind: Literal["toy"] = "toy"
    base_dir: str
    """A Hugging Face causal-LM directory: the sweep's base (the built-in tiny Llama by default)."""
    tokenizer_dir: str
    train: CorpusPrefixes
    weights: dict[str, float]
    """Blend weights by corpus (CorpusPrefixes fields), taken from the plan's blend."""
    seq_len: int = Field(ge=8)
    micro_batch_size: int = Field(gt=0)
    """Sequences per worker per step; the global batch is this times the number of workers."""
    peak_lr: float = Field(gt=0.0)
    """The plan's LR (lr_fraction x the base's max_lr)."""
    seed: Seed = 0
    valid: dict[str, str] = Field(default_factory=dict)
    """Validation prefixes by side, in the job's watch order (the plan's --valid-data-path order): each evaluated
    apart at step 0 and at every checkpoint, logged as Megatron-LM logs them; empty: no evaluation."""
    eval_sequences: int = Field(16, gt=0, le=100_000)
    """Held-out sequences per validation set (the proxy's own eval_sequences in a rehearsal)."""
    min_step_seconds: float = Field(0.0, ge=0.0)
    """A floor on each step's wall time: the toy model steps in milliseconds, and a rehearsal whose
    fault drill kills a node between checkpoints needs steps that last long enough to be caught."""


Trainer = Annotated[MegatronTrainer | ToyTrainer, Field(discriminator="kind")]


class JobWandb(StrictConfig):
    """The W&B run of the full run, beside the sweep's trials; the API key reaches the workers in the job's
    environment only, never this file."""

    mode: Literal["online", "offline"]
    """As the submitter resolved the sweep's tracking (online without a key there falls back to offline)."""
    project: str = Field(min_length=1, max_length=128)
    entity: str | None = Field(None, min_length=1, max_length=128)
    group: str = Field(min_length=1, max_length=128)
    """The sweep's name: the trials' group, so the full run sits beside them."""
    config: dict[str, Any]
    """The plan (plan.json's content), as the run's W&B config."""


class JobConfig(StrictConfig):
    """One full-run job: the Ray Train worker group and what each worker runs."""

    name: str = Field(min_length=1)
    """The job's submission id; also the Ray Train run name (its folder under storage_path)."""
    num_workers: int = Field(gt=0)
    """One worker per GPU (per CPU slot in a rehearsal)."""
    workers_per_node: int = Field(gt=0)
    """GPUs per node: the PACK placement fills nodes in this many workers at a time."""
    use_gpu: bool
    resources_per_worker: dict[str, float]
    """Ray resources each worker reserves, e.g. {"GPU": 1, "CPU": 8} on an 8-GPU node of 64 cores."""
    tensor_parallel: int = Field(ge=1)
    """TP size: consecutive ranks of this many must share a node (checked before training)."""
    steps: int = Field(gt=0)
    """Optimizer steps of the whole run; the final checkpoint is taken at this step."""
    checkpoint_interval: int = Field(gt=0)
    """Steps between checkpoints: a lost node costs at most this many recomputed steps."""
    max_failures: int = Field(ge=0)
    """Worker-group restarts Ray Train allows (a lost worker or node) before the job fails."""
    storage_path: str
    """Shared storage every node reaches: Ray Train's run state and checkpoints live under it."""
    trainer: Trainer
    watch: WatchConfig | None = None
    """The forgetting watch (train_entry/fullrun/evaluations.py); None: no validation sets to watch."""
    wandb: JobWandb | None = None
    """None: the sweep tracked nothing in W&B."""

    @model_validator(mode="after")
    def _layout_fits(self) -> JobConfig:
        if self.workers_per_node % self.tensor_parallel:
            raise ValueError(
                f"workers_per_node must be a multiple of tensor_parallel so no TP group spans nodes, "
                f"got {self.workers_per_node=}, {self.tensor_parallel=}"
            )
        if self.num_workers % self.workers_per_node:
            raise ValueError(f"num_workers must fill whole nodes, got {self.num_workers=}, {self.workers_per_node=}")
        return self
