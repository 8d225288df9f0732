"""`sweep promote watch RUN`: a submitted or rehearsed job's evaluations, measured against what it was held to.

The job's own job.json says what its watch held it to (the validation sets, the non-English share, the tokens per
iteration, the predicted trajectory); its log, read from the cluster's Jobs API for a submission or from the
rehearsal's job.log, gives the evaluations in Megatron-LM's lines. Both are read back as untrusted input: job.json
through its versioned model, the log line by line through the same reader the job's watch uses. A team that launched
the plan's pretrain_gpt.sh itself gives its Megatron-LM stdout log (`--log FILE`): the plan says what the watch holds
it to, as it would have told the job, and a validation line that does not read as one of the plan's sets' losses
stops the reading at that file and line.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from pydantic import ConfigDict, Field

from sweep.address import AddressError, jobs_client, parse_address
from sweep.files.compat import JOB, WATCH
from sweep.files.records import CorruptFile, read_model, write_model
from sweep.files.rundir import PlanDir, RunDir
from sweep.promote.errors import PromotionError
from sweep.promote.launch.job_records import read_records
from sweep.promote.launch.log_evidence import LogEvidence
from sweep.promote.launch.record_checks import check_job, check_plan
from sweep.promote.launch.rehearse import JOB_LOG
from sweep.promote.launch.watching import watch_config
from sweep.promote.plan.plan import Plan
from train_entry.config import StrictConfig, shown
from train_entry.fullrun.config import JOB_JSON, JobConfig
from train_entry.fullrun.evaluations import Evaluations, WatchConfig
from train_entry.fullrun.watch import OVERSHOOTS_TO_TRIP, WatchedEvaluation
from train_entry.megatron.megatron_log import read_validation, report_lines
from train_entry.trial_config import BaseLosses

MOST_LOG_BYTES = 1 << 30
"""A job log read whole: a month-long run's log at Megatron-LM's default log interval is tens of MB."""
WATCH_JSON = "watch.json"
"""What `sweep promote watch` last read, kept beside the job's job.json (a --log's beside its plan's plan.json): the
report's watch plot draws it without reading a cluster's log."""


@dataclass(frozen=True)
class WatchedJob:
    job_id: str
    source: str
    """Where the log was read: the rehearsal's job.log, the cluster's Jobs API, or --log files."""
    watch: WatchConfig
    base: BaseLosses | None
    evaluations: list[WatchedEvaluation]
    run_tokens: int
    """The whole run's training tokens (the job's steps, or the plan's tokens): where the prediction ends."""
    directory: Path
    """Where its watch.json is kept: the job's folder, or the plan's for a --log."""


class WatchedRow(StrictConfig):
    """One evaluation as watched: what a WatchedEvaluation measured and what it was held to."""

    # Measured: a diverged run's forgetting may be non-finite, and is kept as it is.
    model_config = ConfigDict(allow_inf_nan=True, ser_json_inf_nan="constants")

    step: int = Field(ge=0)
    tokens_seen: int = Field(ge=0)
    domain_gain: float
    forgetting: float
    upper: float | None
    """The predicted upper bound at these tokens; None: no credible prediction there."""
    overshoots: int = Field(ge=0)


class WatchRecord(StrictConfig):
    """watch.json: a job's evaluations as `sweep promote watch` last read them."""

    job_id: str = Field(min_length=1, max_length=300)
    source: str = Field(max_length=10_000)
    run_tokens: int = Field(gt=0)
    watch: WatchConfig
    base: BaseLosses | None
    evaluations: list[WatchedRow] = Field(max_length=1_000_000)

    @classmethod
    def of(cls, job: WatchedJob) -> WatchRecord:
        rows = [
            WatchedRow(
                step=e.metrics.step,
                tokens_seen=e.metrics.tokens_seen,
                domain_gain=e.metrics.domain_gain,
                forgetting=e.metrics.forgetting,
                upper=e.upper,
                overshoots=e.overshoots,
            )
            for e in job.evaluations
        ]
        return cls(job_id=job.job_id, source=job.source, run_tokens=job.run_tokens, watch=job.watch, base=job.base,
                   evaluations=rows)  # fmt: skip


def keep_record(job: WatchedJob) -> Path:
    """Writes the job's watch.json; its path."""
    path = job.directory / WATCH_JSON
    write_model(path, WatchRecord.of(job), WATCH)
    return path


def latest_record(run_dir: Path) -> tuple[Path, WatchRecord] | None:
    """The run's most recently written watch.json (any plan's, any job's), read back as untrusted input (CorruptFile);
    None when no job of the run was watched."""
    run = RunDir(run_dir)
    found = [
        path
        for plan in run.plans()
        for path in [plan.path / WATCH_JSON, *(job / WATCH_JSON for job in _job_dirs(run, plan))]
        if path.is_file()
    ]
    if not found:
        return None
    path = max(found, key=lambda item: item.stat().st_mtime)
    return path, read_model(path, WatchRecord, fmt=WATCH)


def watched_job(run_dir: Path, *, job_id: str | None = None, allow_remote: bool = False) -> WatchedJob:
    """The job's evaluations: `job_id`'s, else the latest rehearsal's, else the latest submission's."""
    run = RunDir(run_dir)
    candidates = [(plan, job_dir) for plan in run.plans() for job_dir in _job_dirs(run, plan)]
    if job_id is not None:
        candidates = [(plan, job_dir) for plan, job_dir in candidates if job_dir.name == job_id]
    if not candidates:
        wanted = f"job {shown(job_id)}" if job_id else "submitted or rehearsed job"
        raise PromotionError(f"{run.promotion} holds no {wanted}: submit or rehearse a plan first")
    plan, job_dir = max(candidates, key=lambda item: item[1].stat().st_mtime)
    job = _read_job(job_dir)
    if job.watch is None:
        raise PromotionError(f"{job_dir / JOB_JSON}: the job has no forgetting watch (planned before it had one)")
    planned = _read_plan(plan)
    trial = check_plan(run, plan, planned)
    check_job(job_dir, job, planned, trial, rehearsal=job_dir.parent.parent != plan.path)
    source, text = _log(plan, job_dir, allow_remote=allow_remote)
    evaluations = _evaluations(job.watch, [(source, text)], last_iteration=job.steps, of=f"job {job.name}")
    tokens = job.steps * job.watch.tokens_per_iteration
    return WatchedJob(job_dir.name, source, job.watch, evaluations.base, evaluations.watched, tokens, job_dir)


def watched_log(run_dir: Path, logs: list[Path], *, plan_id: str | None = None) -> WatchedJob:
    """The evaluations in Megatron-LM stdout logs (read in the order given: a --skip-train launch's base evaluation
    first, then the training launches'), held to the plan's watch: `plan_id`'s, else the run's only plan."""
    run = RunDir(run_dir)
    plan_dir, plan = _plan(run, plan_id)
    check_plan(run, plan_dir, plan)
    watch = watch_config(plan, stop_on_forgetting=False)
    texts = [(str(path), _log_text(path, f"--log {path}")) for path in logs]
    evaluations = _evaluations(watch, texts, last_iteration=plan.run.optimization.train_iters, of=f"plan {plan.id}")
    source = ", ".join(str(path) for path in logs)
    return WatchedJob(
        f"of plan {plan.id}", source, watch, evaluations.base, evaluations.watched, plan.tokens, plan_dir.path
    )


def _plan(run: RunDir, plan_id: str | None) -> tuple[PlanDir, Plan]:
    plans = run.plans()
    if plan_id is not None:
        plans = [plan for plan in plans if plan.path.name == plan_id]
    if len(plans) != 1:
        known = ", ".join(plan.path.name for plan in run.plans()) or "none"
        wanted = f"no plan {shown(plan_id)}" if plan_id is not None else f"{len(plans)} plans, not one"
        raise PromotionError(f"{run.promotion} holds {wanted} (plans: {known}): name the log's plan with --plan")
    return plans[0], _read_plan(plans[0])


def _read_plan(directory: PlanDir) -> Plan:
    try:
        return Plan.read(directory.path)
    except CorruptFile as error:
        raise PromotionError(str(error)) from None


def _evaluations(watch: WatchConfig, logs: list[tuple[str, str]], *, last_iteration: int, of: str) -> Evaluations:
    """The evaluations in `logs` ((where it was read, its text), in the order the run wrote them), each validation line
    read strictly and admitted as evidence (sweep.promote.launch.log_evidence) before it is measured; PromotionError
    naming the log and its line (numbered as an editor numbers them) otherwise."""
    evaluations = Evaluations(watch)
    evidence = LogEvidence(last_iteration=last_iteration)
    for source, text in logs:
        for number, line in report_lines(text):
            where = f"{source}, line {number}"
            try:
                found = read_validation(line)
            except ValueError as error:
                raise PromotionError(f"{where}: {error}: {shown(line.strip(), 160)}") from None
            if found is not None and found.set_index >= len(watch.sets):
                raise PromotionError(
                    f"{where}: validation set {found.set_index}, where {of} has {len(watch.sets)} "
                    f"({', '.join(watch.sets)}): not a log of its launch"
                )
            if found is not None and evidence.admit(where, found):
                evaluations.read(line)
    return evaluations


def _log_text(path: Path, named: str) -> str:
    """A log whole, read as untrusted input: a regular file of at most MOST_LOG_BYTES, undecodable bytes replaced (a
    validation line holding any then fails to read as one); PromotionError starting with `named` otherwise."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise PromotionError(f"{named}: not a regular file")
        if size > MOST_LOG_BYTES:
            raise PromotionError(f"{named}: {size:,} bytes, over the {MOST_LOG_BYTES:,} a run's log is read to")
        return path.read_bytes().decode("utf-8", errors="replace")
    except OSError as error:
        raise PromotionError(f"{named}: cannot read it ({error.strerror})") from None


def _job_dirs(run: RunDir, plan: PlanDir) -> list[Path]:
    """Each submission's and each rehearsal's job folder (the one holding its job.json); RunDirError for one that is
    a link leading out of the run (its watch.json is written beside its job.json)."""
    folders = [plan.path / "jobs", *(p / "jobs" for p in sorted(plan.rehearsals.glob("*")))]
    return [
        run.inside(job) for folder in folders if folder.is_dir() for job in sorted(folder.iterdir()) if job.is_dir()
    ]


def _read_job(job_dir: Path) -> JobConfig:
    """job.json of `job_dir`; PromotionError when it is not one, or names another job than its folder does."""
    path = job_dir / JOB_JSON
    try:
        job = read_model(path, JobConfig, fmt=JOB)
    except CorruptFile as error:
        raise PromotionError(str(error)) from None
    if job.name != job_dir.name:
        raise PromotionError(
            f"{path}: name is {shown(job.name)}, but the job's folder is {shown(job_dir.name)}: a job's record lives "
            "in the folder its submission id names"
        )
    return job


def _log(plan: PlanDir, job_dir: Path, *, allow_remote: bool) -> tuple[str, str]:
    rehearsal_log = job_dir.parent.parent / JOB_LOG
    if job_dir.parent.parent != plan.path:  # a rehearsal's job: its log was kept beside it
        if not rehearsal_log.exists():
            raise PromotionError(f"{rehearsal_log} is missing: the rehearsal did not keep its job's log")
        return str(rehearsal_log), _log_text(rehearsal_log, str(rehearsal_log))
    record = next((r for r in read_records(plan) if r.submission_id == job_dir.name), None)
    if record is None:
        raise PromotionError(f"{plan.jobs_json} records no job {job_dir.name!r}")
    try:
        url = parse_address(record.address, allow_remote=allow_remote, source=f"{plan.jobs_json}: address").url
        return f"the Jobs API at {url}", jobs_client(url).get_job_logs(job_dir.name)
    except (AddressError, RuntimeError, ValueError) as error:
        raise PromotionError(f"job {job_dir.name}: its log could not be read ({error})") from None


def watch_table(job: WatchedJob) -> str:
    """Measured against predicted, one row per evaluation, every figure from the job's own log and job.json."""
    prediction = job.watch.prediction
    lines = [f"job {job.job_id} (log: {job.source})"]
    if job.base is None:
        return "\n".join([*lines, "no evaluation at iteration 0 in the log yet: nothing to measure against"])
    lines.append(f"base losses: domain {job.base.domain_loss:.4f}, general {job.base.general_loss:.4f}")
    lines.append(
        f"prediction: {prediction.source}" if prediction is not None else "prediction: none (no credible prediction)"
    )
    lines.append(
        f"{'iteration':>9}  {'tokens':>15}  {'domain_gain':>11}  {'forgetting':>10}  {'upper bound':>11}  verdict"
    )
    for evaluation in job.evaluations:
        m = evaluation.metrics
        upper = "-" if evaluation.upper is None else f"{evaluation.upper:.4f}"
        lines.append(
            f"{m.step:>9}  {m.tokens_seen:>15,}  {m.domain_gain:>11.4f}  {m.forgetting:>10.4f}  {upper:>11}  "
            f"{_verdict(evaluation)}"
        )
    if not job.evaluations:
        lines.append("(no evaluation after the base's yet)")
    return "\n".join(lines)


def _verdict(evaluation: WatchedEvaluation) -> str:
    if evaluation.upper is None:
        return "no credible prediction"
    if evaluation.tripped:
        return f"TRIPPED ({evaluation.overshoots} in a row over the bound)"
    if evaluation.overshoots:
        return f"over the bound ({evaluation.overshoots} in a row; trips at {OVERSHOOTS_TO_TRIP})"
    return "within"
