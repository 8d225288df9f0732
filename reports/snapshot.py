"""What a report shows of one run: a single read of its study, summarised with the sweep's own functions.

The study is read once, so the rows, the learning curves and the best observed trial of a sweep that is still
running all describe the same moment. Selection, the best.json summary and the cost come from
sweep/choice/observed.py and sweep/choice/best.py, so the report can never disagree with `sweep run` or best.json.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reports.tables import flat_items
from sweep.choice.best import BestSummary, best_summary_with, trials_expected
from sweep.choice.observed import Selection, select
from sweep.choice.surrogate import Surrogate, fit_surrogate
from sweep.files.rundir import NotARunDirectory, RunDir
from sweep.files.storage_url import shown_url
from sweep.space import MixRange, SearchSpace
from sweep.spec.spec import spec_copy_content
from sweep.study.record import base_losses_of, history_of
from sweep.study.row import TrialRow
from sweep.study.run_study import open_run
from sweep.study.study import SweepPlan
from sweep.study.table import rows_of
from train_entry.trial_config import BaseLosses, Metrics


@dataclass(frozen=True, kw_only=True)
class RunSnapshot:
    name: str
    """The study's name (the run directory's name unless it was moved)."""
    run_dir: Path
    taken_at: dt.datetime
    plan: SweepPlan
    spec: dict[str, Any]
    """The run's spec.yaml as written (empty when missing): read raw, because its relative corpus
    paths were relative to the original spec's folder and need not resolve from the run directory."""
    rows: list[TrialRow]
    histories: dict[int, list[Metrics]]
    """Every evaluation of each trial that kept them, by trial number."""
    bases: dict[int, BaseLosses]
    """The base's losses each trial in `histories` stored, by trial number: where its learning curves start."""
    without_history: list[int]
    """Trials recorded before evaluations were kept (a run made by an older cpt-sweep)."""
    selection: Selection
    surrogate: Surrogate | None
    """The surrogate the pick in `summary` was chosen on, refitted to the very trials it was fitted to (with
    confirmation, those before the pick's round), so the report's surrogate plot draws that function; None without
    one."""
    summary: BestSummary
    """best.json's content, computed now: the same function `sweep run` writes it with."""

    @property
    def finished(self) -> int:
        return sum(row.finished for row in self.rows)

    @property
    def expected(self) -> int:
        """Trials the sweep ends with as things stand (confirmation rounds decide how many)."""
        return trials_expected(self.summary, self.rows, self.plan)

    @property
    def running(self) -> bool:
        return self.finished < self.expected

    @property
    def space(self) -> SearchSpace:
        return self.plan.space

    def mix_label(self, row: TrialRow) -> str:
        """The mix as listed in the spec ("4:1"), or normalised to one side = 1 for a sampled range."""
        return ratio_label(row.domain_share) if isinstance(self.space.mix, MixRange) else row.mix


def load_run(run_dir: Path) -> RunSnapshot:
    """Reads a run directory; NotARunDirectory when it holds no sweep."""
    run = RunDir(run_dir)
    record, sweep = open_run(run)
    plan = sweep.plan
    frozen_trials = sweep.trials()
    rows = rows_of(frozen_trials, plan)
    histories = {frozen.number: history_of(frozen) for frozen in frozen_trials}
    study = f"study {record.study_name!r} in {shown_url(record.url(run))}"
    bases = {frozen.number: base_losses_of(frozen, study=study) for frozen in frozen_trials if histories[frozen.number]}
    selection = select(
        rows, forgetting_budget=plan.forgetting_budget, space=plan.space, downstream_budget=plan.downstream_budget
    )
    everything = fit_surrogate(rows, plan.space)
    summary = best_summary_with(everything, selection, rows, plan)
    return RunSnapshot(
        name=record.study_name,
        run_dir=run_dir,
        taken_at=dt.datetime.now(dt.UTC).replace(microsecond=0),
        plan=plan,
        spec=_spec_as_written(run),
        rows=rows,
        histories={number: history for number, history in histories.items() if history is not None},
        bases=bases,
        without_history=[number for number, history in histories.items() if history is None],
        selection=selection,
        surrogate=pick_surrogate(summary, rows, plan.space, fitted=everything),
        summary=summary,
    )


def pick_surrogate(
    summary: BestSummary, rows: list[TrialRow], space: SearchSpace, *, fitted: Surrogate | None
) -> Surrogate | None:
    """The surrogate the pick was chosen on: `fitted` (to every row) when the pick's fit used every fitted trial,
    else a refit to exactly the trials its fit names (a fit is a function of its rows)."""
    fit = summary.pick.fit
    if fit is None:
        return fitted
    if fitted is not None and fitted.fit.trials == fit.trials:
        return fitted
    used = set(fit.trials)
    return fit_surrogate([row for row in rows if row.number in used], space)


def _spec_as_written(run: RunDir) -> dict[str, Any]:
    if not run.spec_copy.is_file():
        return {}
    return spec_copy_content(run.spec_copy)


def ratio_label(domain_share: float) -> str:
    """general:domain with the smaller side as 1, as DESIGN writes mixes: 0.2 -> "4:1", 0.6 -> "1:1.5"."""
    general = 1.0 - domain_share
    if general >= domain_share:
        return f"{general / domain_share:.3g}:1"
    return f"1:{domain_share / general:.3g}"


def spec_differences(snapshots: list[RunSnapshot]) -> dict[str, list[str]]:
    """For each run, the spec settings (as "key.path=value") on which the runs do not all agree:
    what a comparison is a comparison of (corpus, base, seed...)."""
    flat = [dict(flat_items(snapshot.spec)) for snapshot in snapshots]
    keys = sorted(set().union(*flat))
    differing = [key for key in keys if len({values.get(key) for values in flat}) > 1]
    return {
        snapshot.name: [f"{key}={values.get(key, '(unset)')}" for key in differing]
        for snapshot, values in zip(snapshots, flat)
    }
