"""The figures of benchmarks/gpu_sweep.py's sweeps, read from what each left: its Optuna study (the trials' start and
end, the pick) and its trials' result.json (train_entry.usage: training seconds and tokens, peak memory); and the
lines and table rows that show them."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

import torch
from optuna.trial import FrozenTrial

from sweep.files.rundir import NotARunDirectory, RunDir
from sweep.spec.shapes import builtin_shape
from sweep.spec.spec import SweepSpec
from sweep.spec.trial_scale import trial_size, trials_at_once
from sweep.study.row import TrialRow
from sweep.study.run_study import open_run
from sweep.study.study import PICK_ATTR
from sweep.study.table import trial_rows
from train_entry.file_format import TRIAL_RESULT
from train_entry.megatron.config import ModelShape
from train_entry.trial_config import TrialResult, TrialUsage


@dataclass(frozen=True)
class Card:
    name: str
    count: int
    memory_gb: float
    """One GPU's memory, GB (1e9 bytes): what each spec's execution.gpu_memory_gb is set to."""

    @classmethod
    def detect(cls) -> Card | None:
        if not torch.cuda.is_available():
            return None
        properties = torch.cuda.get_device_properties(0)
        return cls(properties.name, torch.cuda.device_count(), properties.total_memory / 1e9)


@dataclass(frozen=True)
class TrialFigures:
    number: int
    role: str
    status: str
    span_s: float
    """From its Optuna trial's start to its end: its process's start-up, data, training, evaluations."""
    train_s: float | None
    mfu: float | None
    """Its training steps' model FLOPs per second over one card's peak."""
    peak_gb: float | None


@dataclass(frozen=True)
class SweepFigures:
    gpus_per_trial: float
    at_once: int
    exit_code: int
    stopped: bool
    """Stopped at --time-limit: the figures are those of the trials that ended."""
    wall_s: float
    to_first_trial_s: float | None
    trials_s: float | None
    after_last_s: float | None
    finished: int
    trials_per_hour: float | None
    """Finished trials over the span from the first trial's start to the last one's end."""
    trials_per_hour_wall: float
    card_mfu: float | None
    peak_gb: float | None
    estimate_gb: float
    """sweep.spec.trial_memory's figure for one trial, which the spec was checked with."""
    pick: str
    trials: list[TrialFigures]


def base_shape(spec: SweepSpec) -> ModelShape:
    builtin = spec.base.builtin
    return builtin_shape(builtin, vocab_size=builtin.vocab_size, seq_len=spec.proxy.seq_len)


@dataclass(frozen=True)
class Ran:
    """One `sweep run` as its process went."""

    run_dir: Path
    started: datetime
    ended: datetime
    """Local time, as Optuna stamps its trials."""
    exit_code: int
    stopped: bool


def measure(ran: Ran, spec: SweepSpec, *, flops: float, peak_flops: float, card: Card) -> SweepFigures:
    """The figures of one sweep from its study and its trials' result.json: `flops` the model's per token,
    `peak_flops` one card's."""
    _, study = open_run(RunDir(ran.run_dir))
    run = RunDir(ran.run_dir)
    rows = {row.number: row for row in trial_rows(study)}
    ended = [frozen for frozen in study.trials() if frozen.datetime_complete is not None and frozen.number in rows]
    trials = [_trial(frozen, rows[frozen.number], run, flops=flops, peak_flops=peak_flops) for frozen in ended]
    first = min((frozen.datetime_start for frozen in ended), default=None)
    last = max((frozen.datetime_complete for frozen in ended), default=None)
    span = (last - first).total_seconds() if ended else None
    wall = (ran.ended - ran.started).total_seconds()
    tokens = sum(_usage(run, frozen.number).train_tokens for frozen in ended if _usage(run, frozen.number))
    peaks = [trial.peak_gb for trial in trials if trial.peak_gb is not None]
    execution = spec.execution
    return SweepFigures(
        gpus_per_trial=execution.gpus,
        at_once=trials_at_once(execution, concurrency=execution.concurrency, max_gpus=card.count),
        exit_code=ran.exit_code,
        stopped=ran.stopped,
        wall_s=wall,
        to_first_trial_s=(first - ran.started).total_seconds() if first else None,
        trials_s=span,
        after_last_s=(ran.ended - last).total_seconds() if last else None,
        finished=len(ended),
        trials_per_hour=len(ended) * 3600 / span if span else None,
        trials_per_hour_wall=len(ended) * 3600 / wall,
        card_mfu=tokens * flops / (span * card.count * peak_flops) if span else None,
        peak_gb=max(peaks, default=None),
        estimate_gb=trial_size(execution, spec.proxy, base_shape(spec)).total_gb,
        pick=_pick(study.study.user_attrs.get(PICK_ATTR)),
        trials=trials,
    )


@dataclass(frozen=True)
class PickSide:
    """One sweep of the pick check: how it ended and what it picked."""

    gpus_per_trial: float
    exit_code: int
    stopped: bool
    wall_s: float
    finished: int
    """Its trials that ended (searched and confirmed)."""
    pick: str


def pick_side(ran: Ran, spec: SweepSpec) -> PickSide:
    """How the sweep went; one that ended before its study was made picked nothing (its log says why)."""
    try:
        _, study = open_run(RunDir(ran.run_dir))
    except NotARunDirectory:
        trials, pick = [], None
    else:
        trials, pick = study.trials(), study.study.user_attrs.get(PICK_ATTR)
    return PickSide(
        gpus_per_trial=spec.execution.gpus,
        exit_code=ran.exit_code,
        stopped=ran.stopped,
        wall_s=(ran.ended - ran.started).total_seconds(),
        finished=sum(1 for trial in trials if trial.datetime_complete is not None),
        pick=_pick(pick),
    )


def _trial(frozen: FrozenTrial, row: TrialRow, run: RunDir, *, flops: float, peak_flops: float) -> TrialFigures:
    usage = _usage(run, frozen.number)
    timed = usage is not None and usage.train_seconds > 0
    return TrialFigures(
        number=frozen.number,
        role=row.role.value,
        status=row.status.value,
        span_s=(frozen.datetime_complete - frozen.datetime_start).total_seconds(),
        train_s=usage.train_seconds if usage else None,
        mfu=usage.train_tokens * flops / usage.train_seconds / peak_flops if timed else None,
        peak_gb=usage.peak_memory_gb if usage else None,
    )


def _usage(run: RunDir, number: int) -> TrialUsage | None:
    """What the trial's result.json says it used; None for a trial that wrote none (stopped, failed)."""
    try:
        return TRIAL_RESULT.read(run.trial_result(number), TrialResult).usage
    except (OSError, ValueError):
        return None


def _pick(pick: dict | None) -> str:
    if not pick:
        return "none"
    if pick.get("lr_fraction") is None:
        return str(pick.get("verdict"))
    return f"{pick['lr_fraction']:.3g} @ {pick['mix']} ({pick.get('confirmation')})"


def preparation_line(figures: dict[str, Any]) -> str:
    preparation = figures["preparation"]
    return (
        f"data preparation, once, cold cache (BPE, tokenising, the base's pretraining and losses): "
        f"{preparation['cold_s']:.1f} s; warm, in each sweep: {preparation['warm_s']:.1f} s; a Ray start and "
        f"shutdown: {figures['ray_start_s']:.1f} s"
    )


COLUMNS = ("GPUs per trial", "at once", "trials", "sweep s", "to first trial s", "trials s", "after last s",
           "trials/hour", "vs whole GPU", "card MFU", "trial MFU", "peak GB per trial (estimate)", "pick")  # fmt: skip
TABLE_HEADER = f"| {' | '.join(COLUMNS)} |\n|{'---|' * len(COLUMNS)}"


def table_row(sweep: SweepFigures, *, baseline: dict[str, Any]) -> str:
    base = baseline["trials_per_hour"]
    ratio = f"{sweep.trials_per_hour / base:.2f}x" if sweep.trials_per_hour and base else "-"
    mfus = [trial.mfu for trial in sweep.trials if trial.mfu is not None]
    mfu = f"{min(mfus):.1%}-{max(mfus):.1%}" if mfus else "-"
    trials = f"{sweep.finished}{' (stopped)' if sweep.stopped else ''}"
    cells = (
        f"{sweep.gpus_per_trial:g}", str(sweep.at_once), trials, f"{sweep.wall_s:.0f}", _s(sweep.to_first_trial_s),
        _s(sweep.trials_s), _s(sweep.after_last_s), _n(sweep.trials_per_hour), ratio, _percent(sweep.card_mfu), mfu,
        f"{_n(sweep.peak_gb, '.1f')} ({sweep.estimate_gb:.1f})", sweep.pick,
    )  # fmt: skip
    return f"| {' | '.join(cells)} |"


def trials_line(sweep: SweepFigures) -> str:
    shown = [
        f"{trial.number} {trial.role} {trial.status} {trial.span_s:.0f} s (training {_s(trial.train_s)} s, MFU "
        f"{_percent(trial.mfu)}, {_n(trial.peak_gb, '.1f')} GB)"
        for trial in sweep.trials
    ]
    return f"  gpus {sweep.gpus_per_trial:g}, trials: " + "; ".join(shown)


def _s(seconds: float | None) -> str:
    return _n(seconds, ".0f")


def _n(value: float | None, spec: str = ".0f") -> str:
    return "-" if value is None else format(value, spec)


def _percent(value: float | None) -> str:
    return "-" if value is None else f"{value:.1%}"
