"""`sweep run` of a spec with a ladder: every rung's sweep in turn, smallest first, then the loss law over all of them.

Each rung is a whole sweep in runs/<ladder>/rungs/<rung>/ (resumable after kill -9 as any sweep: its study is its
only state), so `sweep status`, `sweep report` and promotion work on a rung alone. ladder.json is written when the
ladder starts and after every rung with the evaluations read from its study, so it always holds what has finished;
once the last rung has finished, the law is fitted to every evaluation (and a team's earlier runs), predicted at the
target with bootstrap intervals, and each rung is predicted from the others.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from sweep.files.rundir import RunDir, check_run_name
from sweep.files.storage_url import shown_url
from sweep.ladder.gpus import rung_gpus
from sweep.ladder.law_study import study_observations
from sweep.ladder.record import LadderMismatch, LadderSummary, RungResult, read_ladder, write_ladder
from sweep.ladder.rungs import RungSpec, rung_specs
from sweep.ladder.tokenizers import check_one_tokenizer
from sweep.law.csv import read_runs_csv
from sweep.law.runs import fit_table
from sweep.law.table import LawInputError
from sweep.run.driver import SweepOutcome, SweepView, locked
from sweep.spec.shapes import base_shape
from sweep.spec.spec import SweepSpec
from sweep.study.run_study import open_run
from sweep.target.scale import LadderTarget


@dataclass(frozen=True, kw_only=True)
class RungStart:
    """How one rung's sweep is to run."""

    study_name: str
    fresh: bool


RungRunner = Callable[[RungSpec, RunDir, RungStart], SweepOutcome]
"""Runs (or resumes) one rung's sweep to its end: sweep.run.driver.run_sweep in `sweep run`, scripted trials in tests."""


@dataclass(frozen=True)
class LadderOutcome:
    summary: LadderSummary
    outcomes: dict[str, SweepOutcome]
    """Each rung's sweep outcome, by rung name."""

    @property
    def unfinished(self) -> int:
        """Planned trials that did not finish, over every rung."""
        return sum(outcome.planned - outcome.finished for outcome in self.outcomes.values())


def run_ladder(
    spec: SweepSpec,
    run: RunDir,
    target: LadderTarget,
    *,
    fresh: bool,
    view: SweepView,
    run_rung: RungRunner,
    max_gpus: int | None = None,
) -> LadderOutcome:
    """Runs (or resumes) every rung of the spec's ladder in `run`, smallest first, matched to `target`, and fits the
    law over them; `max_gpus` is the cluster's GPUs when known, for the plan of trials at once shown before the
    first rung. Before anything is written, ClusterTooSmall when a rung's trial takes more GPUs than the cluster has,
    and TokenizersDiffer when the rungs do not share one tokenizer."""
    rungs = rung_specs(spec, target.cpt_share)
    names = [check_run_name(f"{run.path.name}.{rung.name}", origin="the ladder's name and a rung's") for rung in rungs]
    # Before anything is written: a rung the cluster cannot hold, or rungs of two tokenizers, stop here.
    plan = gpu_plan(rungs, max_gpus=max_gpus)
    check_one_tokenizer(rungs)
    with locked(run):
        if fresh and (trash := run.move_to_trash(keep=run.lock)) is not None:
            view.message(f"--fresh: the previous ladder is kept in {trash}")
        summary = _start(spec, run, rungs, target)
        write_ladder(run, summary)  # from the start: `sweep status` shows the ladder while its first rung runs
        for line in plan:
            view.message(line)
        outcomes: dict[str, SweepOutcome] = {}
        for index, (rung, study_name) in enumerate(zip(rungs, names)):
            view.message(_rung_line(rung, index, len(rungs)))
            outcome = run_rung(rung, run.rung(rung.name), RungStart(study_name=study_name, fresh=fresh))
            outcomes[rung.name] = outcome
            if outcome.finished < outcome.planned:
                view.message(f"rung {rung.name}: {outcome.planned - outcome.finished} trial(s) unfinished; stopping")
                break
            summary = _with_rung(summary, rung, run.rung(rung.name))
            write_ladder(run, summary)
        if summary.is_finished:
            view.message(f"fitting the law to {len(summary.observations)} evaluations ({summary.settings.refits} "
                         "bootstrap refits, each rung held out in turn)")  # fmt: skip
            summary = _fitted(spec, summary, view)
            write_ladder(run, summary)
    return LadderOutcome(summary=summary, outcomes=outcomes)


def _start(spec: SweepSpec, run: RunDir, rungs: list[RungSpec], target: LadderTarget) -> LadderSummary:
    """The ladder.json a run starts from: a new one, whose finished rungs are read again from their studies."""
    planned = [rung.name for rung in rungs]
    if run.ladder_json.exists() and (stored := read_ladder(run)).planned != planned:
        raise LadderMismatch(
            f"{run.ladder_json} is a ladder of rungs {stored.planned}, not {planned}; rerun with --fresh to start "
            "over, or --name for a new ladder"
        )
    ladder = spec.ladder
    return LadderSummary(
        target=ladder.target,
        at_target=target,
        forgetting_budget=spec.objective.forgetting_budget,
        pick=spec.objective.pick,
        space=spec.space,
        search=spec.search,
        rungs=[rung.design for rung in rungs],
        runs=None if ladder.runs is None else str(ladder.runs),
        settings=ladder.law,
    )


def _with_rung(summary: LadderSummary, rung: RungSpec, rung_run: RunDir) -> LadderSummary:
    """The summary with a finished rung's evaluations, read from its study."""
    record, sweep = open_run(rung_run)
    design = rung.design
    study = f"study {record.study_name!r} in {shown_url(record.url(rung_run))}"
    rows = study_observations(
        sweep, rung=rung.name, parameters=design.parameters, pretrain_tokens=design.pretrain_tokens, study=study
    )
    result = RungResult(name=rung.name, trials=len({row.trial for row in rows}), evaluations=len(rows))
    return summary.model_copy(
        update={"finished": [*summary.finished, result], "observations": [*summary.observations, *rows]}
    )


def _fitted(spec: SweepSpec, summary: LadderSummary, view: SweepView) -> LadderSummary:
    """The law over every rung (and the earlier runs), or a note saying why there is none."""
    ladder = spec.ladder
    try:  # the earlier runs' file was read with the spec, hours ago: a file changed since is a note, not a crash
        earlier = list(read_runs_csv(ladder.runs).rows) if ladder.runs is not None else []
        summary = summary.model_copy(update={"observations": summary.observations + earlier})
        fit = fit_table(
            summary.table(),
            summary.at_target.scale,
            budget=summary.forgetting_budget,
            settings=summary.settings,
            pick=summary.pick,
            box=summary.box,
            validate=True,
            progress=view.message,
            source="the ladder's rungs" + (f" and {ladder.runs}" if ladder.runs is not None else ""),
        )
    except LawInputError as exc:
        return summary.model_copy(update={"note": f"no law: {exc}"})
    return summary.model_copy(update={"fit": fit})


def gpu_plan(rungs: list[RungSpec], *, max_gpus: int | None) -> list[str]:
    """Each rung's GPUs per trial and trials at once on `max_gpus` GPUs (None: not known yet), when trials run on
    GPUs; shown before the first rung starts. ClusterTooSmall when a rung's trial takes more than `max_gpus`."""
    if rungs[0].spec.execution.gpus == 0:
        return []
    cluster = f"the Ray cluster's {max_gpus} GPUs" if max_gpus is not None else "the cluster's GPUs"
    lines = [f"ladder plan (trials at once: at most execution.concurrency, as many as {cluster} hold):"]
    for rung in rungs:
        spec = rung.spec
        shape = base_shape(spec.base.model, spec.base.builtin, spec.proxy.seq_len)
        plan = rung_gpus(rung.name, shape, spec.proxy, spec.execution, concurrency=spec.execution.concurrency,
                         max_gpus=max_gpus)  # fmt: skip
        lines.append(f"  {plan.line()}")
    return lines


def _rung_line(rung: RungSpec, index: int, count: int) -> str:
    design = rung.design
    return (
        f"rung {rung.name} ({index + 1} of {count}): {rung.parameters:,} non-embedding parameters "
        f"(log N {math.log(rung.parameters):.2f}), base pretrained on {design.pretrain_tokens:,.0f} tokens at peak LR "
        f"{design.max_lr:.4g}; trials of {design.steps} steps x {design.batch_size} x "
        f"{rung.spec.proxy.seq_len} = {design.trial_tokens:,} tokens"
    )
