"""The Ray Train worker function: the rank-to-node check, then the trainer, with checkpoints reported to Ray.

TorchTrainer runs `train_loop_per_worker` once per worker with torch.distributed already
initialised (NCCL on GPUs, gloo in a rehearsal). After a lost worker or node, Ray Train restarts
the whole group (FailureConfig.max_failures) and each worker resumes: the toy trainer from Ray's
latest checkpoint (ray.train.get_checkpoint), the megatron entry from the latest checkpoint in
its own save_dir on shared storage (it reads its tracker itself).
"""

from __future__ import annotations

import contextlib
import sys
from pathlib import Path
from typing import Any

import ray
import ray.train
import torch.distributed as dist

from train_entry.fullrun.config import LOG_PREFIX, STOPPED_KEY, JobConfig, MegatronTrainer, ToyTrainer
from train_entry.fullrun.job_watch import JobWatch
from train_entry.fullrun.placement import check_tensor_parallel_groups, placement_lines


def log_rank0(message: str) -> None:
    if dist.get_rank() == 0:
        # Straight to stdout: Ray Train patches print() into its logger, whose lines reach the job log twice.
        sys.stdout.write(f"{LOG_PREFIX} {message}\n")
        sys.stdout.flush()


def train_loop_per_worker(config: dict[str, Any]) -> None:
    job = JobConfig.model_validate(config)
    preflight(job)  # on this worker's own image, before the first collective touches its GPU
    node_of_rank: list[Any] = [None] * dist.get_world_size()
    dist.all_gather_object(node_of_rank, ray.get_runtime_context().get_node_id())
    for line in placement_lines(node_of_rank):
        log_rank0(f"placement {line}")
    check_tensor_parallel_groups(node_of_rank, job.tensor_parallel)
    if isinstance(job.trainer, ToyTrainer):
        _run_toy(job, job.trainer)
    else:
        _run_megatron(job, job.trainer)


def preflight(job: JobConfig) -> None:
    """What a worker will run, checked against this node's image: a megatron run's config against
    megatron-core's rules and the layers installed here. CoreConfigError or ValidationError.

    The job's driver runs it before any worker starts, and each worker before its first collective.
    """
    if not isinstance(job.trainer, MegatronTrainer):
        return
    # Imported here: megatron-core is needed for megatron jobs only (a rehearsal's image may lack it).
    from train_entry.megatron.config import FullRunConfig
    from train_entry.megatron.core_configs import check_backend, core_configs, has_transformer_engine

    config = FullRunConfig.model_validate(job.trainer.run)
    core_configs(config)
    check_backend(config, transformer_engine=has_transformer_engine())


def _run_toy(job: JobConfig, trainer: ToyTrainer) -> None:
    from train_entry.fullrun.toy import train_toy

    watch = _job_watch(job)

    def on_checkpoint(step: int, loss: float, directory: Path | None) -> None:
        checkpoint = ray.train.Checkpoint.from_directory(str(directory)) if directory is not None else None
        metrics: dict[str, Any] = {"step": step, "loss": loss}
        if watch is not None and watch.stop_reason is not None:
            metrics[STOPPED_KEY] = watch.stop_reason  # rank 0's report is the one the driver's result holds
        ray.train.report(metrics, checkpoint=checkpoint)
        log_rank0(f"checkpoint at step {step}")

    latest = ray.train.get_checkpoint()
    try:
        with latest.as_directory() if latest is not None else contextlib.nullcontext(None) as resume_dir:
            result = train_toy(
                trainer,
                steps=job.steps,
                checkpoint_interval=job.checkpoint_interval,
                resume_dir=Path(resume_dir) if resume_dir is not None else None,
                scratch=Path(job.storage_path) / job.name / "scratch",
                on_checkpoint=on_checkpoint,
                log=log_rank0,
                evaluator=watch,
            )
    finally:
        if watch is not None:
            watch.close()
    ended = "stopped" if result.stopped else "finished"
    log_rank0(f"{ended} at step {result.step}, started at step {result.start_step}")


def _job_watch(job: JobConfig) -> JobWatch | None:
    """Rank 0's forgetting watch (and W&B run); None on the other ranks and without validation sets."""
    if job.watch is None or dist.get_rank() != 0:
        return None
    directory = Path(job.storage_path) / job.name
    return JobWatch(job.watch, job.wandb, name=job.name, directory=directory, log=log_rank0)


def _run_megatron(job: JobConfig, trainer: MegatronTrainer) -> None:
    # Imported here: megatron-core's model code and CUDA are needed on GPU workers only.
    from train_entry.megatron.config import FullRunConfig
    from train_entry.megatron.train import train

    config = FullRunConfig.model_validate(trainer.run)
    watch = _job_watch(job)

    def on_checkpoint(iteration: int, directory: Path) -> None:
        # The checkpoint stays in the entry's save_dir on shared storage (a 70B one is ~1 TB): Ray is
        # told where it is, and a restarted worker group resumes from it through the entry's tracker.
        metrics: dict[str, Any] = {"step": iteration, "checkpoint_dir": str(directory)}
        if watch is not None and watch.stop_reason is not None:
            metrics[STOPPED_KEY] = watch.stop_reason
        ray.train.report(metrics)
        log_rank0(f"checkpoint at step {iteration}: {directory}")

    try:
        # The watch is the entry's evaluator on rank 0: it logs each set's loss as Megatron-LM does, measures, logs
        # to W&B and may stop the run; without a watch (no sets in the plan) the entry's own evaluator logs them.
        result = train(config, on_checkpoint=on_checkpoint, evaluator=watch)
    finally:
        if watch is not None:
            watch.close()
    ended = "stopped" if result.stopped else "finished"
    log_rank0(f"{ended} at step {result.iteration}, started at step {result.start_iteration} ({result.start.value})")
