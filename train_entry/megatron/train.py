"""The full run: a FullRunConfig trained with megatron-core, one process per GPU.

train(config) runs in a process of a torch.distributed job (torchrun, or a Ray Train worker whose
NCCL group is already initialised): it lays the ranks out in tensor x context x data x pipeline
groups, builds this rank's model chunks, the distributed optimizer and the LR schedule, starts from
the run's latest checkpoint (or the base's weights), and trains with megatron-core's pipeline
schedules, saving every save_interval iterations and at the end. It evaluates the plan's validation sets apart
(train_entry/megatron/evaluation.py).
"""

from __future__ import annotations

import logging
import os
import random
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.distributed as dist
from megatron.core import parallel_state
from megatron.core.distributed import DistributedDataParallel, finalize_model_grads
from megatron.core.optimizer import get_megatron_optimizer
from megatron.core.pipeline_parallel import get_forward_backward_func
from megatron.core.tensor_parallel import model_parallel_cuda_manual_seed
from megatron.core.utils import get_attr_wrapped_model, get_batch_on_this_cp_rank
from pydantic import Field

from train_entry.config import StrictConfig
from train_entry.megatron import checkpoint_io
from train_entry.megatron.checkpoints import StartKind, StartPoint, start_point
from train_entry.megatron.config import FullRunConfig
from train_entry.megatron.core_configs import check_backend, core_configs, has_transformer_engine
from train_entry.megatron.data import build_datasets, micro_batches, to_device
from train_entry.megatron.evaluation import EntryEvaluations, Evaluator
from train_entry.megatron.fusions import fusions_usable
from train_entry.megatron.lr_schedule import build_scheduler
from train_entry.megatron.model import build_chunks, wrap_for_training
from train_entry.megatron.optimizer_state import step_count

logger = logging.getLogger(__name__)

DISTRIBUTED_TIMEOUT = timedelta(minutes=30)
"""How long a collective may wait: long enough for rank 0 to build the blend's index on a cold cache."""


class StepMetrics(StrictConfig):
    """What the run reports every log_interval iterations (the same on every rank)."""

    iteration: int
    """Iterations done (the optimizer steps taken since the base)."""
    train_loss: float
    """Mean token loss of the training batches since the previous report."""
    lr: float
    grad_norm: float
    """Global gradient norm of the last iteration, before clipping."""
    seconds_per_iteration: float
    """Wall time of a training iteration (forward, backward, optimizer step), evaluation and saving excluded."""
    tokens_per_second: float
    """Training tokens per second over all GPUs."""
    valid_losses: list[float] | None = None
    """Each validation set's mean token loss on its fixed batches, in data.valid's order, when this iteration
    evaluated."""


class FullRunResult(StrictConfig):
    start: StartKind
    start_iteration: int
    iteration: int
    """The iteration the run stopped at (train_iters once complete)."""
    train_loss: float | None
    """The last reported training loss; None when no iteration ran."""
    valid_losses: list[float] | None
    """The last evaluation's losses, one per validation set; None when the run evaluated nothing."""
    stopped: bool = False
    """Whether the evaluator (the job's forgetting watch) stopped the run, at `iteration`, after its checkpoint."""
    checkpoints: list[str] = Field(default_factory=list)
    """The checkpoints this call saved, in order."""
    adam_step: int
    """Adam's step count at the end, which its bias correction uses: the optimizer steps since the base
    (the iteration, unless a step was skipped), carried through every resume."""
    wall_seconds: float


def train(
    config: FullRunConfig,
    *,
    on_log: Callable[[StepMetrics], None] | None = None,
    on_checkpoint: Callable[[int, Path], None] | None = None,
    evaluator: Evaluator | None = None,
) -> FullRunResult:
    """Train `config` to optimization.train_iters on this process's GPU; collective over the whole job.

    Uses the job's process group when there is one (Ray Train), else creates an NCCL group from
    torchrun's environment (RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT). on_log gets
    every report and on_checkpoint every saved checkpoint, on every rank. With eval_interval, data.valid's sets are
    evaluated apart at iteration 0 of a fresh run (the base's losses) and every eval_interval; each evaluation goes to
    `evaluator` on rank 0 (the job's forgetting watch), else to the entry's own (EntryEvaluations), and when it asks
    to stop the run checkpoints and ends there.
    """
    created_group = _init_process_group()
    try:
        return _Run(config, evaluator).run(on_log=on_log, on_checkpoint=on_checkpoint)
    finally:
        parallel_state.destroy_model_parallel()
        if created_group:
            dist.destroy_process_group()


def _init_process_group() -> bool:
    """Pick this process's GPU and join (or create) the job's process group; True when created here."""
    if not torch.cuda.is_available():
        raise RuntimeError("the full-run entry trains on CUDA GPUs; this process sees none")
    # Ray Train may show a worker only its own GPU; torchrun shows every GPU of the node.
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local_rank if torch.cuda.device_count() > 1 else 0)
    if dist.is_initialized():
        return False
    dist.init_process_group("nccl", timeout=DISTRIBUTED_TIMEOUT)
    return True


@contextmanager
def single_gpu_job() -> Iterator[None]:
    """A job of one process on this process's current GPU, for measurements outside a launched job.

    An NCCL group of one over an in-memory store (no port, no torchrun environment), torn down on
    exit together with the megatron-core parallel state a Trainer set up inside it.
    """
    if not torch.cuda.is_available():
        raise RuntimeError("the full-run entry trains on CUDA GPUs; this process sees none")
    dist.init_process_group("nccl", store=dist.HashStore(), rank=0, world_size=1)
    try:
        yield
    finally:
        parallel_state.destroy_model_parallel()
        dist.destroy_process_group()


class Trainer:
    """One rank's model chunks, distributed optimizer and LR schedule for a config, and its training iteration.

    train() drives it over the blend and checkpoints it; the GPU benchmark and the plan's
    calibration drive it over synthetic batches. Needs the job's process group; sets up
    megatron-core's parallel state, which parallel_state.destroy_model_parallel() tears down.
    """

    def __init__(self, config: FullRunConfig) -> None:
        self.config = config
        par = config.parallelism
        world_size = dist.get_world_size()
        self.data_parallel_size = par.data_parallel_size(world_size)
        self.num_microbatches = par.num_microbatches(world_size)
        self.transformer_engine = has_transformer_engine()
        check_backend(config, transformer_engine=self.transformer_engine)
        self.fusions = fusions_usable("cuda")
        self.transformer, optimizer_config, ddp_config = core_configs(
            config, transformer_engine=self.transformer_engine, fusions=self.fusions
        )
        parallel_state.initialize_model_parallel(
            tensor_model_parallel_size=par.tensor,
            pipeline_model_parallel_size=par.pipeline,
            virtual_pipeline_model_parallel_size=par.virtual_pipeline,
            context_parallel_size=par.context,
            expert_model_parallel_size=par.expert,
            expert_tensor_parallel_size=par.expert_tensor,
            distributed_timeout_minutes=int(DISTRIBUTED_TIMEOUT.total_seconds() // 60),
        )
        _seed(config.seed)
        chunks = build_chunks(config.model, self.transformer, transformer_engine=self.transformer_engine)
        self.model = wrap_for_training(chunks, self.transformer, ddp_config)
        self.optimizer = get_megatron_optimizer(optimizer_config, self.model)
        self.scheduler = build_scheduler(self.optimizer, config.optimization)
        self._wire_schedule_hooks()
        self.reads_data = [_attr(chunk, "pre_process") or _attr(chunk, "post_process") for chunk in self.model]
        """Per model chunk: whether it reads micro-batches (the first and the last pipeline stage)."""
        self.forward_backward_func = get_forward_backward_func()
        self.device = torch.device("cuda", torch.cuda.current_device())

    def _wire_schedule_hooks(self) -> None:
        """Let megatron-core's pipeline schedules drive DDP's overlapped gradient and parameter communication."""
        model, config = self.model, self.transformer
        single = len(model) == 1
        no_sync = [chunk.no_sync for chunk in model]
        grad_sync = [chunk.start_grad_sync for chunk in model]
        param_sync = [chunk.start_param_sync for chunk in model]
        config.no_sync_func = no_sync[0] if single else no_sync
        config.grad_sync_func = grad_sync[0] if single else grad_sync
        if self.config.parallelism.pipeline > 1:
            # align_param_gather: every pipeline stage starts its parameter all-gathers together.
            config.param_sync_func = param_sync[0] if single else param_sync
        config.finalize_model_grads_func = finalize_model_grads
        config.grad_scale_func = self.optimizer.scale_loss

    def forward_backward(self, iterators: list[Iterator[Any] | None], *, forward_only: bool) -> torch.Tensor:
        """One global batch through the pipeline; the summed [token loss, tokens] of this rank's micro-batches.

        iterators: one per model chunk, yielding micro-batches (dicts of tokens, labels, loss_mask,
        position_ids) for the chunks in reads_data, None for the others.
        """
        seq_length = self.config.model.seq_length
        reported = self.forward_backward_func(
            forward_step_func=self._forward_step,
            data_iterator=iterators if len(iterators) > 1 else iterators[0],
            model=self.model,
            num_microbatches=self.num_microbatches,
            seq_length=seq_length,
            micro_batch_size=self.config.parallelism.micro_batch_size,
            decoder_seq_length=seq_length,
            forward_only=forward_only,
        )
        total = torch.zeros(2, device=self.device)
        for micro_batch in reported:  # only the last pipeline stage computes losses
            total += micro_batch["lm loss"]
        return total

    def _forward_step(self, data_iterator: Iterator[Any] | None, model: DistributedDataParallel):
        first, last = _attr(model, "pre_process"), _attr(model, "post_process")
        if not (first or last):
            return model(None, None, None), _unused_loss
        batch = get_batch_on_this_cp_rank(to_device(next(data_iterator), self.device))
        output = model(
            batch["tokens"] if first else None,
            batch["position_ids"] if first else None,
            None,
            labels=batch["labels"] if last else None,
        )
        return output, partial(_token_loss, batch["loss_mask"])

    def gradients(self, iterators: list[Iterator[Any] | None]) -> torch.Tensor:
        """Forward and backward of one global batch into fresh gradient buffers; its summed [token loss, tokens]."""
        for chunk in self.model:
            chunk.zero_grad_buffer()
        self.optimizer.zero_grad()
        return self.forward_backward(iterators, forward_only=False)

    def apply_gradients(self) -> float:
        """The distributed optimizer's step on the gradients in DDP's buffers, then the LR schedule's; the grad norm."""
        updated, grad_norm, _ = self.optimizer.step()
        if updated:
            self.scheduler.step(increment=1)
        return float(grad_norm or 0.0)

    def train_step(self, iterators: list[Iterator[Any] | None]) -> tuple[float, float]:
        """One iteration: gradients, the optimizer step, the LR schedule's step; the mean loss and the grad norm."""
        total = self.gradients(iterators)
        grad_norm = self.apply_gradients()
        return _mean_over_data_parallel(total), grad_norm


class _Run:
    """One call of train(): a Trainer, the blend it reads, its checkpoints and the loop over them."""

    def __init__(self, config: FullRunConfig, evaluator: Evaluator | None) -> None:
        self.config = config
        self.trainer = Trainer(config)
        self.datasets = build_datasets(config, built_on_this_rank=any(self.trainer.reads_data))
        tokens_per_iteration = config.parallelism.global_batch_size * config.model.seq_length
        if dist.get_rank() != 0:
            evaluator = None  # rank 0's alone: the losses are known to every rank, and logged once
        elif evaluator is None and config.eval_interval is not None:
            evaluator = EntryEvaluations(config.data, tokens_per_iteration=tokens_per_iteration, log=logger.info)
        self.evaluator = evaluator
        self.checkpoints: list[str] = []

    def run(
        self,
        *,
        on_log: Callable[[StepMetrics], None] | None,
        on_checkpoint: Callable[[int, Path], None] | None,
    ) -> FullRunResult:
        config = self.config
        started = time.perf_counter()
        start = self._start()
        iteration, train_iters = start.iteration, config.optimization.train_iters
        iterators = self._iterators(self.datasets.train, consumed=iteration * config.parallelism.global_batch_size)
        window = _Window()
        train_loss = valid_losses = None
        stopped = False
        if start.iteration == 0 and config.eval_interval is not None:
            valid_losses, _ = self._evaluate(0)  # the base's losses; a stop here would have nothing to stop
        while iteration < train_iters and not stopped:
            step_started = time.perf_counter()
            loss, grad_norm = self.trainer.train_step(iterators)
            iteration += 1
            window.add(loss, time.perf_counter() - step_started)
            evaluated = config.eval_interval is not None and (
                iteration % config.eval_interval == 0 or iteration == train_iters
            )
            if evaluated:
                valid_losses, stopped = self._evaluate(iteration)
            if evaluated or iteration % config.log_interval == 0 or iteration == train_iters:
                train_loss = self._report(iteration, window, grad_norm, valid_losses if evaluated else None, on_log)
                window = _Window()
            if stopped or iteration % config.checkpoint.save_interval == 0 or iteration == train_iters:
                self._save(iteration, on_checkpoint)
        return FullRunResult(
            start=start.kind,
            start_iteration=start.iteration,
            iteration=iteration,
            train_loss=train_loss,
            valid_losses=valid_losses,
            stopped=stopped,
            checkpoints=self.checkpoints,
            adam_step=step_count(self.trainer.optimizer),
            wall_seconds=time.perf_counter() - started,
        )

    def _report(
        self,
        iteration: int,
        window: _Window,
        grad_norm: float,
        valid_losses: list[float] | None,
        on_log: Callable[[StepMetrics], None] | None,
    ) -> float:
        """Logs the iterations since the last report (and hands them to on_log); their mean training loss."""
        config = self.config
        seconds = window.seconds / window.iterations
        metrics = StepMetrics(
            iteration=iteration,
            train_loss=_shared_by_pipeline(window.loss / window.iterations),
            lr=self.trainer.optimizer.param_groups[0]["lr"],
            grad_norm=grad_norm,
            seconds_per_iteration=seconds,
            tokens_per_second=config.parallelism.global_batch_size * config.model.seq_length / seconds,
            valid_losses=valid_losses,
        )
        _log(metrics, config.optimization.train_iters)
        if on_log is not None:
            on_log(metrics)
        return metrics.train_loss

    def _start(self) -> StartPoint:
        """Load what the run starts from; rank 0 reads the tracker so every rank loads the same checkpoint."""
        chosen: list[StartPoint | None] = [start_point(self.config.checkpoint) if dist.get_rank() == 0 else None]
        dist.broadcast_object_list(chosen, src=0)
        start = chosen[0]
        trainer = self.trainer
        if start.kind is StartKind.RESUME:
            _, evaluations = checkpoint_io.load_resume(
                start.directory,
                model=trainer.model,
                optimizer=trainer.optimizer,
                scheduler=trainer.scheduler,
                shape=self.config.model,
            )
            if self.evaluator is not None:
                self.evaluator.restore(evaluations)  # the base's losses, read before the checkpoint
        elif start.kind is StartKind.BASE:
            checkpoint_io.load_base(start.directory, model=trainer.model, optimizer=trainer.optimizer)
        _log_rank0(f"starting at iteration {start.iteration} from {start.kind.value} {start.directory or ''}")
        return start

    def _iterators(self, dataset: Any, *, consumed: int) -> list[Iterator[Any] | None]:
        """One micro-batch iterator per model chunk that reads data (the first and the last), None for the rest."""
        par = self.config.parallelism
        return [
            micro_batches(
                dataset,
                consumed=consumed,
                micro_batch_size=par.micro_batch_size,
                rank=parallel_state.get_data_parallel_rank(),
                size=self.trainer.data_parallel_size,
                num_workers=self.config.data.num_workers,
            )
            if reads
            else None
            for reads in self.trainer.reads_data
        ]

    def _evaluate(self, iteration: int) -> tuple[list[float], bool]:
        """Each validation set's mean token loss over its same eval_iters batches, in data.valid's order, handed to
        rank 0's evaluator; the losses and whether it asks to stop (every rank learns both)."""
        losses = []
        for index in range(len(self.config.data.valid)):
            dataset = self.datasets.valid[index] if self.datasets.valid else None
            iterators = self._iterators(dataset, consumed=0)
            total = torch.zeros(2, device=self.trainer.device)
            for _ in range(self.config.eval_iters):
                total += self.trainer.forward_backward(iterators, forward_only=True)
            losses.append(_shared_by_pipeline(_mean_over_data_parallel(total)))
        stop = [self.evaluator.evaluate(iteration, losses) if self.evaluator is not None else False]
        dist.broadcast_object_list(stop, src=0)
        return losses, bool(stop[0])

    def _save(self, iteration: int, on_checkpoint: Callable[[int, Path], None] | None) -> None:
        trainer = self.trainer
        # Rank 0's evaluator state, on every rank: megatron-core checks the common state is the same everywhere.
        evaluations = [self.evaluator.state() if self.evaluator is not None else None]
        dist.broadcast_object_list(evaluations, src=0)
        directory = checkpoint_io.save(
            Path(self.config.checkpoint.save_dir),
            iteration,
            model=trainer.model,
            optimizer=trainer.optimizer,
            scheduler=trainer.scheduler,
            config=self.config,
            evaluations=evaluations[0] or {},
        )
        self.checkpoints.append(str(directory))
        if on_checkpoint is not None:
            on_checkpoint(iteration, directory)


@dataclass
class _Window:
    """The training iterations since the last report."""

    loss: float = 0.0
    """Summed mean loss of each iteration."""
    seconds: float = 0.0
    iterations: int = 0

    def add(self, loss: float, seconds: float) -> None:
        self.loss, self.seconds, self.iterations = self.loss + loss, self.seconds + seconds, self.iterations + 1


def _token_loss(
    loss_mask: torch.Tensor, output: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, dict[str, torch.Tensor]]:
    """Summed token loss and token count; megatron-core's schedule divides by the count for the gradient."""
    mask = loss_mask.view(-1).float()
    loss = torch.sum(output.view(-1).float() * mask)
    tokens = mask.sum().to(torch.int)
    return loss, tokens, {"lm loss": torch.stack([loss.detach(), tokens.float()])}


def _unused_loss(output: torch.Tensor):
    raise AssertionError("megatron-core computes the loss on the last pipeline stage only")


def _mean_over_data_parallel(total: torch.Tensor) -> float:
    """Token-weighted mean loss over the data- and context-parallel ranks (0 off the last pipeline stage)."""
    dist.all_reduce(total, group=parallel_state.get_data_parallel_group(with_context_parallel=True))
    return float(total[0] / total[1]) if total[1] > 0 else 0.0


def _shared_by_pipeline(value: float) -> float:
    """A loss only the last pipeline stage knows, made known to every stage (the others hold 0)."""
    if not parallel_state.is_pipeline_last_stage(ignore_virtual=True):
        value = 0.0
    shared = torch.tensor([value], device=torch.cuda.current_device(), dtype=torch.float64)
    dist.all_reduce(shared, group=parallel_state.get_pipeline_model_parallel_group())
    return float(shared[0])


def _attr(model: torch.nn.Module, name: str) -> Any:
    return get_attr_wrapped_model(model, name)


def _seed(seed: int) -> None:
    """Python, numpy and torch seeds, differing per pipeline stage; megatron-core's tensor-parallel RNG tracker.

    Each pipeline stage holds different layers, so it initialises them from its own stream.
    """
    stage_seed = seed + 100 * parallel_state.get_pipeline_model_parallel_rank()
    random.seed(stage_seed)
    np.random.seed(stage_seed)
    torch.manual_seed(stage_seed)
    model_parallel_cuda_manual_seed(stage_seed)


def _log(metrics: StepMetrics, train_iters: int) -> None:
    losses = metrics.valid_losses
    valid = f" | valid losses {', '.join(f'{loss:.4f}' for loss in losses)}" if losses is not None else ""
    _log_rank0(
        f"iteration {metrics.iteration}/{train_iters} | loss {metrics.train_loss:.4f}{valid} | lr {metrics.lr:.3e} "
        f"| grad norm {metrics.grad_norm:.3f} | {metrics.seconds_per_iteration:.2f} s/it "
        f"| {metrics.tokens_per_second:,.0f} tokens/s"
    )


def _log_rank0(message: str) -> None:
    if dist.get_rank() == 0:
        logger.info(message)
