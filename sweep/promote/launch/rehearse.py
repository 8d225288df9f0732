"""`sweep promote RUN --rehearse`: the full run's job path at toy scale on a local simulated multi-node cluster.

The same path as a submission: the Jobs API, the Ray Train worker group packed node by node,
the rank-to-node check (TP 2 on nodes of 2 workers, so it is a real check), a checkpoint every
N steps and restore. The proxy's model trains under DDP on CPU (gloo) in place of the megatron
entry, on the sweep's own corpora blended by the plan's weights at the promoted point's LR fraction of
the proxy base's max_lr. The fault drill kills the node holding the last ranks right after the
first checkpoint and starts a replacement node, so the restore is exercised too. The cluster is
always shut down, on success, failure or Ctrl-C.
"""

from __future__ import annotations

import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path

from pydantic import BaseModel

from sweep.address import jobs_client, parse_address
from sweep.files.compat import JOB_RESULT
from sweep.files.records import read_model
from sweep.files.rundir import PlanDir
from sweep.promote.errors import PromotionError
from sweep.promote.launch.jobs import follow_logs
from sweep.promote.launch.local_cluster import ClusterShape, LocalCluster
from sweep.promote.launch.submit import submit_plan
from train_entry.fullrun.config import LOG_PREFIX, RESULT_JSON, JobConfig, JobWandb, ToyTrainer
from train_entry.fullrun.evaluations import WatchConfig
from train_entry.fullrun.toy import load_state
from train_entry.optimizer import OptimizerConfig
from train_entry.trial_config import TrialConfig

REGISTRATION_TIMEOUT_S = 60.0
JOB_LOG = "job.log"
"""The job's whole log (secrets masked), kept beside the rehearsal's Ray Train results."""

_STEP = re.compile(rf"{LOG_PREFIX} step (\d+)/")
_CHECKPOINT = re.compile(rf"{LOG_PREFIX} checkpoint at step (\d+)")
_RESUMED = re.compile(rf"{LOG_PREFIX} resumed from step (\d+)")
_PLACEMENT = re.compile(rf"{LOG_PREFIX} placement node (\w+): ranks ([\d, ]+)")
_STOPPED = re.compile(rf"{LOG_PREFIX} (stopped by the forgetting watch.*)")


@dataclass(frozen=True, kw_only=True)
class RehearsalConfig:
    """The toy scale of a rehearsal: small enough for a laptop, shaped like the real job."""

    nodes: int = 2
    workers_per_node: int = 2
    """One CPU per worker; also the TP size, so each node holds exactly one TP group."""
    steps: int = 40
    checkpoint_interval: int = 10
    micro_batch_size: int = 2
    max_failures: int = 2
    min_step_seconds: float = 0.5
    """With the fault drill: toy steps take milliseconds; at 0.5 s a checkpoint interval lasts 5 s, well over the
    ~2 s the controller takes to record a checkpoint, so the drill's kill lands inside the next interval. Without it
    nothing waits on a step, and steps run at their own pace."""
    fault_drill: bool = True
    """Kill a worker node after the first checkpoint and bring up a replacement: rehearses the restore."""
    timeout_s: float = 900.0
    """The whole job, cluster start excluded; a busy 2-core machine needs ~2 minutes."""
    eval_sequences: int = 16
    """Held-out sequences per validation set at each evaluation (the proxy's own sets, fewer of them: 5 evaluations
    of 3 sets on one CPU worker)."""

    @property
    def step_floor_s(self) -> float:
        """The floor on each step's wall time: min_step_seconds for the fault drill, else none."""
        return self.min_step_seconds if self.fault_drill else 0.0

    def run_tokens(self, seq_len: int) -> int:
        """Training tokens of the whole toy run: each step trains one micro-batch on every worker."""
        return self.steps * self.micro_batch_size * self.nodes * self.workers_per_node * seq_len


@dataclass
class RehearsalLog:
    """What the job's log told about its progress, read line by line as it streams."""

    lines: list[str] = field(default_factory=list)
    max_step: int = 0
    checkpoints: list[int] = field(default_factory=list)
    resumed_from: list[int] = field(default_factory=list)
    steps_lost: list[int] = field(default_factory=list)
    """For each restore: the furthest step reached before it minus the step resumed from."""
    node_of_last_rank: str | None = None
    stopped_by_watch: str | None = None
    """The job's own line saying the forgetting watch stopped it, and why."""

    def read(self, line: str) -> str | None:
        """Records one line; returns its `fullrun:` message, or None for Ray's own lines."""
        self.lines.append(line)
        at = line.find(LOG_PREFIX)
        if at < 0:
            return None
        message = line[at:]
        if match := _STEP.match(message):
            self.max_step = max(self.max_step, int(match.group(1)))
        elif match := _CHECKPOINT.match(message):
            self.checkpoints.append(int(match.group(1)))
        elif match := _RESUMED.match(message):
            resumed = int(match.group(1))
            self.resumed_from.append(resumed)
            self.steps_lost.append(self.max_step - resumed)
            self.max_step = resumed
        elif match := _STOPPED.match(message):
            self.stopped_by_watch = match.group(1)
        elif match := _PLACEMENT.match(message):
            self.node_of_last_rank = match.group(1)  # nodes are listed in rank order: the last holds the last ranks
        return message


@dataclass(frozen=True)
class RehearsalResult:
    submission_id: str
    status: str
    final_step: int | None
    """The step of the job's final checkpoint (what a resumed run would start from)."""
    losses: list[tuple[int, float]]
    """(step, mean training loss) at every checkpoint of the run, across restores."""
    stopped_by_watch: str | None = None
    """Why the forgetting watch stopped the job; None when it did not."""
    status_message: str = ""
    """Ray's status message of the job (after a stop by the watch, its last log lines, the reason among them)."""


def toy_trainer(
    trial: TrialConfig, weights: dict[str, float], config: RehearsalConfig, *, sides: list[str] | None = None
) -> ToyTrainer:
    """The proxy's base, tokenizer, corpora and optimizer recipe with the plan's blend weights and the
    promoted point's lr_fraction; a warmup of a tenth of the rehearsal's steps; each of `sides` evaluated on the
    proxies' own validation text of that side."""
    recipe = trial.proxy.model_dump(include=set(OptimizerConfig.model_fields))
    return ToyTrainer(
        **{**recipe, "warmup_steps": max(1, config.steps // 10)},
        base_dir=trial.base_dir,
        tokenizer_dir=trial.tokenizer_dir,
        train=trial.train,
        weights=weights,
        seq_len=trial.proxy.seq_len,
        micro_batch_size=config.micro_batch_size,
        peak_lr=trial.peak_lr,
        seed=trial.proxy.seed,
        min_step_seconds=config.step_floor_s,
        valid={side: getattr(trial.valid, side) for side in sides or []},
        eval_sequences=min(config.eval_sequences, trial.proxy.eval_sequences),
    )


def rehearse(
    *,
    plan_id: str,
    plan_dir: PlanDir,
    trainer: ToyTrainer,
    config: RehearsalConfig,
    echo: Callable[[str], None] = print,
    watch: WatchConfig | None = None,
    wandb: JobWandb | None = None,
) -> RehearsalResult:
    """Runs the rehearsal under plan_dir/rehearsal/<UTC time>/ and returns what it showed."""
    out = plan_dir.rehearsals / datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
    storage = out / "ray_results"
    log = RehearsalLog()
    killed: list[str] = []
    echo(f"rehearsal: starting a local cluster of {config.nodes} nodes x {config.workers_per_node} CPU workers")
    with LocalCluster(shape=ClusterShape(nodes=config.nodes, cpus_per_node=config.workers_per_node)) as cluster:
        address = parse_address(cluster.address, allow_remote=False)
        job_for = partial(_toy_job, config=config, trainer=trainer, storage=storage, watch=watch, wandb=wandb)
        # The rehearsal's interpreter is the cluster's: the one with cpt-sweep installed.
        submitted = submit_plan(
            plan_id=plan_id, plan=PlanDir(out), job_for=job_for, address=address, force=False, python=sys.executable
        )
        echo(f"rehearsal: cluster up, Ray session under {cluster.session_root} (removed at the end)")
        echo(f"rehearsal: submitted job {submitted.submission_id} to {address.url} through the Jobs API")

        def on_line(line: str) -> None:
            message = log.read(line)
            if message is None:
                return
            echo(message)
            if config.fault_drill and not killed and log.checkpoints and log.node_of_last_rank:
                node = log.node_of_last_rank
                _fault_drill(cluster, node, log.checkpoints[-1], run_dir=storage / submitted.submission_id, echo=echo)
                killed.append(node)

        try:
            status = follow_logs(address.url, submitted.submission_id, on_line=on_line, timeout_s=config.timeout_s)
            message = jobs_client(address.url).get_job_info(submitted.submission_id).message or ""
        finally:
            (out / JOB_LOG).write_text("\n".join(log.lines) + "\n", encoding="utf-8")

    final_step, losses = _final_checkpoint(storage / submitted.submission_id)
    result = RehearsalResult(submitted.submission_id, status, final_step, losses, log.stopped_by_watch, message)
    _echo_outcome(result, log, steps=config.steps, echo=echo)
    return result


def _toy_job(
    submission_id: str,
    *,
    config: RehearsalConfig,
    trainer: ToyTrainer,
    storage: Path,
    watch: WatchConfig | None,
    wandb: JobWandb | None,
) -> JobConfig:
    """The rehearsal's job: CPU workers packed node by node, one TP group per node, results under `storage`."""
    return JobConfig(
        name=submission_id,
        num_workers=config.nodes * config.workers_per_node,
        workers_per_node=config.workers_per_node,
        use_gpu=False,
        resources_per_worker={"CPU": 1},
        tensor_parallel=config.workers_per_node,
        steps=config.steps,
        checkpoint_interval=config.checkpoint_interval,
        max_failures=config.max_failures,
        storage_path=str(storage.resolve()),
        trainer=trainer,
        watch=watch,
        wandb=wandb,
    )


def _fault_drill(
    cluster: LocalCluster, node: str, checkpoint_step: int, *, run_dir: Path, echo: Callable[[str], None]
) -> None:
    """Kills `node` once Ray Train has recorded the checkpoint of `checkpoint_step`, then starts a replacement."""
    _wait_until_registered(run_dir, checkpoint_step)
    echo(f"rehearsal: fault drill - killing node {node} after the checkpoint at step {checkpoint_step}")
    cluster.kill_node(node)
    echo(f"rehearsal: replacement node {cluster.add_node()} started")


def _echo_outcome(result: RehearsalResult, log: RehearsalLog, *, steps: int, echo: Callable[[str], None]) -> None:
    """The job's status, its loss at every checkpoint, and the steps each restore had to recompute."""
    echo(f"rehearsal: job {result.status}; final checkpoint at step {result.final_step} of {steps}")
    if result.stopped_by_watch is not None:
        held = "holds" if result.stopped_by_watch in result.status_message else "does not hold"
        echo(f"rehearsal: {result.stopped_by_watch}; Ray's status message {held} the reason")
    for step, loss in result.losses:
        echo(f"rehearsal:   step {step:>5}  loss {loss:.4f}")
    for resumed, lost in zip(log.resumed_from, log.steps_lost):
        echo(f"rehearsal: resumed from step {resumed}, recomputing {lost} steps")


def _wait_until_registered(run_dir: Path, step: int, timeout_s: float = REGISTRATION_TIMEOUT_S) -> None:
    """Waits until Ray Train's controller has registered the checkpoint of `step`.

    A worker's report() returns once the checkpoint is uploaded, but the controller records it a
    moment later (in checkpoint_manager_snapshot.json); a restart resumes only from a recorded one,
    so the drill kills the node after that, as a real failure at that point would find it.
    """
    import json

    snapshot = run_dir / "checkpoint_manager_snapshot.json"
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            latest = json.loads(snapshot.read_text(encoding="utf-8"))["latest_checkpoint_result"]
        except (OSError, ValueError, KeyError):
            latest = None  # not written yet, or caught mid-write
        if latest is not None and latest["metrics"].get("step", 0) >= step:
            return
        time.sleep(0.2)
    raise TimeoutError(f"Ray Train did not record the checkpoint of step {step} in {snapshot} within {timeout_s:.0f} s")


class _JobResult(BaseModel):
    """What result.json says of the job's last checkpoint (the rest of it is free-form metrics)."""

    checkpoint: str | None = None


def _final_checkpoint(run_dir: Path) -> tuple[int | None, list[tuple[int, float]]]:
    """The step and loss history stored in the job's final checkpoint; (None, []) when the job left none.

    The checkpoint is read only from inside the job's own run folder, whatever result.json names.
    """
    path = run_dir / RESULT_JSON
    if not path.is_file():
        return None, []
    checkpoint = read_model(path, _JobResult, fmt=JOB_RESULT).checkpoint
    if checkpoint is None:
        return None, []
    directory = Path(checkpoint)
    if run_dir.resolve() not in directory.resolve().parents:
        raise PromotionError(f"{path} names a checkpoint outside the job's folder {run_dir}: {checkpoint}")
    state = load_state(directory)
    return state["step"], [tuple(pair) for pair in state["losses"]]
