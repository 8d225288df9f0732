"""The trials table: one row per Optuna trial, derived from the study and nothing else.

Because every row is read from the study, the table written to the run directory, the live
view and `sweep status` agree with the Optuna storage by construction.
"""

from __future__ import annotations

from typing import Any

import pandas as pd
from optuna.trial import FrozenTrial

from sweep.files.compat import FORMAT_KEY, TRIALS_TABLE
from sweep.files.records import write_whole
from sweep.files.rundir import RunDir
from sweep.study.record import Attr, Status, status_of
from sweep.study.row import TrialRow
from sweep.study.study import SweepPlan, SweepStudy
from train_entry.data.draws import INTERIM
from train_entry.downstream.scores import DOWNSTREAM_COLUMNS
from train_entry.optimizer import peak_lr


def point_params(frozen: FrozenTrial, plan: SweepPlan) -> dict[str, Any] | None:
    """The trial's point as Optuna params; None while its ask is still choosing it.

    An enqueued grid trial carries its point from the start. A sampled trial has none for the
    moment between its creation and its sampling, or until a rerun when a driver was killed in
    that moment (the rerun chooses it, see SweepStudy.params).
    """
    if plan.space.chosen(frozen.params):
        return frozen.params
    return frozen.user_attrs.get(Attr.POINT.value)


def trial_row(frozen: FrozenTrial, plan: SweepPlan) -> TrialRow:
    attrs = frozen.user_attrs
    point = plan.space.point(point_params(frozen, plan))
    last = attrs.get(Attr.LAST.value) or {}
    figures = attrs.get(Attr.FIGURES.value)
    measured = figures or last
    error = (figures or {}).get("text_error") or {}
    best = attrs.get(Attr.BEST.value) or {}
    status = status_of(frozen)
    steps = attrs.get(Attr.STEPS.value)
    stopped = status in (Status.PRUNED, Status.DIVERGED)
    return TrialRow(
        number=frozen.number,
        status=status,
        reason=attrs.get(Attr.REASON.value),
        lr_fraction=point.lr_fraction,
        peak_lr=peak_lr(point.lr_fraction, max_lr=plan.max_lr),
        mix=str(point.mix),
        domain_share=point.mix.domain_share,
        domain_gain=measured.get("domain_gain"),
        forgetting=measured.get("forgetting"),
        domain_loss=measured.get("domain_loss"),
        general_loss=measured.get("general_loss"),
        text=figures["text"] if figures else (INTERIM if last else None),
        best_domain_gain=best.get("domain_gain"),
        best_step=best.get("step"),
        steps=steps,
        stopped_step=steps if stopped else None,
        tokens_seen=attrs.get(Attr.TOKENS_SEEN.value, last.get("tokens_seen")),
        wall_seconds=attrs.get(Attr.WALL_SECONDS.value),
        attempts=attrs.get(Attr.ATTEMPTS.value, 0),
        seed=attrs.get(Attr.SEED.value, plan.proxy.seed),
        replicate_of=attrs.get(Attr.REPLICATE_OF.value),
        confirms=attrs.get(Attr.CONFIRMS.value),
        forecast_forgetting=_forecast_at(attrs.get(Attr.FORECAST.value), last, figures) if stopped else None,
        gain_text_error=error.get("domain_gain"),
        forgetting_text_error=error.get("forgetting"),
        downstream=attrs.get(Attr.DOWNSTREAM.value),
        downstream_seconds=attrs.get(Attr.DOWNSTREAM_SECONDS.value),
    )


def _forecast_at(stored: dict[str, Any] | None, last: dict[str, Any], figures: dict[str, Any] | None) -> float | None:
    """The forgetting a stopped trial's forecast, stored with its last interim evaluation, predicted it would end at,
    on the text of its figures: moved by what the two texts measured of the same model at that step (figures
    minus the interim evaluation), so that it bounds a figure on the pool, as the completed trials' are. None when
    no forecast was stored for that step."""
    if stored is None or stored.get("step") != last.get("step"):
        return None
    predicted = stored.get("predicted")
    if predicted is None or not figures or figures.get("step") != last.get("step"):
        return predicted
    return predicted + figures["forgetting"] - last["forgetting"]


def trial_rows(sweep: SweepStudy) -> list[TrialRow]:
    return rows_of(sweep.trials(), sweep.plan)


def rows_of(frozen_trials: list[FrozenTrial], plan: SweepPlan) -> list[TrialRow]:
    """A row per trial with a point; one whose ask has not chosen it yet gets its row once it has."""
    return [trial_row(frozen, plan) for frozen in frozen_trials if point_params(frozen, plan) is not None]


def trials_frame(rows: list[TrialRow]) -> pd.DataFrame:
    columns = [name for name in TrialRow.model_fields if name != "downstream"]
    frame = pd.DataFrame([row.model_dump(mode="json", exclude={"downstream"}) for row in rows], columns=columns)
    for task in sorted({task for row in rows for task in row.downstream or {}}):
        for column, field in DOWNSTREAM_COLUMNS.items():
            values = [getattr((row.downstream or {}).get(task), field, None) for row in rows]
            frame[f"{task}_{column}"] = pd.array(values, dtype="Float64")
    # Nullable integer columns keep a missing step count missing rather than a float NaN.
    for column in ("best_step", "steps", "stopped_step", "tokens_seen", "seed", "replicate_of", "confirms"):
        frame[column] = frame[column].astype("Int64")
    return frame


def write_tables(rows: list[TrialRow], run: RunDir) -> None:
    """Writes trials.parquet and trials.csv, each whole or not at all, with the table's format version as their
    first column: a column is what every CSV and Parquet reader takes without options and it survives
    concatenating the tables of several runs, where a comment line would stop `pd.read_csv` and a sidecar file
    would be left behind."""
    frame = trials_frame(rows)
    frame.insert(0, FORMAT_KEY, TRIALS_TABLE.version)
    write_whole(run.inside(run.trials_parquet), frame.to_parquet(index=False))
    write_whole(run.inside(run.trials_csv), frame.to_csv(index=False))
