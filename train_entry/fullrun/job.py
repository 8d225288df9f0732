"""`python -m train_entry.fullrun.job --config job.json`: the full run's Ray job entrypoint.

The Jobs API starts it on the cluster's head with RAY_ADDRESS set. First a preflight: a megatron
run's config must pass megatron-core's checks and be one this image's layers run (no sequence or
context parallelism without Transformer Engine); otherwise the job stops with one line naming the
setting and exit code 2, before any worker takes a GPU (a worker's failure would be retried
max_failures times). Then a Ray Train TorchTrainer: one worker per GPU (per CPU slot in a
rehearsal), packed node by node, restarted from the latest checkpoint up to max_failures times
after a lost worker or node. At the end it writes result.json beside Ray Train's run state and
prints it. When the forgetting watch stopped the run (--stop-on-forgetting, after its checkpoint), the job
prints the reason last and exits with STOPPED_EXIT_CODE, so Ray's status message carries the reason. Ray's own
stop_job would not: it records the fixed message "Job was intentionally stopped." and gives the entrypoint
RAY_JOB_STOP_WAIT_TIME_S (3 s by default, Ray 2.60 job_supervisor.py) before SIGKILL, too short for a checkpoint.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from pydantic import ValidationError

from train_entry.file_format import JOB, JOB_RESULT, FormatError
from train_entry.fullrun.config import LOG_PREFIX, RESULT_JSON, STOPPED_EXIT_CODE, STOPPED_KEY, JobConfig
from train_entry.fullrun.worker import preflight, train_loop_per_worker

CHECKPOINTS_KEPT = 2
"""The latest checkpoint is what a restart needs; the one before it guards against a torn write."""


def run_job(job: JobConfig) -> dict:
    """Trains the job to its end; returns what result.json holds. Raises when Ray Train gives up."""
    from ray.train import CheckpointConfig, FailureConfig, RunConfig, ScalingConfig
    from ray.train.torch import TorchConfig, TorchTrainer

    trainer = TorchTrainer(
        train_loop_per_worker,
        train_loop_config=job.model_dump(mode="json"),
        scaling_config=ScalingConfig(
            num_workers=job.num_workers,
            use_gpu=job.use_gpu,
            resources_per_worker=job.resources_per_worker,
            # One bundle per worker, packed: nodes fill in order, so consecutive ranks share a node.
            placement_strategy="PACK",
        ),
        torch_config=TorchConfig(backend="nccl" if job.use_gpu else "gloo"),
        run_config=RunConfig(
            name=job.name,
            storage_path=job.storage_path,
            failure_config=FailureConfig(max_failures=job.max_failures),
            checkpoint_config=CheckpointConfig(num_to_keep=CHECKPOINTS_KEPT),
        ),
    )
    result = trainer.fit()
    return {
        "name": job.name,
        "step": result.metrics.get("step"),
        "metrics": result.metrics,
        "checkpoint": result.checkpoint.path if result.checkpoint is not None else None,
        "run_dir": result.path,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train_entry.fullrun.job", description=__doc__.splitlines()[0])
    parser.add_argument("--config", type=Path, required=True, help="job.json (a JobConfig)")
    args = parser.parse_args(argv)
    try:
        job = JOB.read(args.config, JobConfig)
    except FormatError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    except (OSError, ValidationError) as error:
        print(f"error: --config {args.config}: {error}", file=sys.stderr)
        return 2
    try:
        preflight(job)
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(["trainer", "run", *map(str, first["loc"])])
        print(f"error: --config {args.config}: {where}: {first['msg']}", file=sys.stderr)
        return 2
    except ValueError as error:  # CoreConfigError: megatron-core's rules or this image's layers
        print(f"error: {error}", file=sys.stderr)
        return 2
    summary = run_job(job)
    run_dir = Path(job.storage_path) / job.name
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / RESULT_JSON).write_text(JOB_RESULT.dumps_data(summary), encoding="utf-8")
    print(f"{LOG_PREFIX} result {json.dumps(summary)}", flush=True)
    stopped = summary["metrics"].get(STOPPED_KEY)
    if stopped:
        # Last, so the status message Ray records (the log's last lines after a non-zero exit) holds the reason.
        print(f"{LOG_PREFIX} {stopped}", flush=True)
        return STOPPED_EXIT_CODE
    return 0


if __name__ == "__main__":
    sys.exit(main())
