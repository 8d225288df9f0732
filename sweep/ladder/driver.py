"""`sweep run` of a spec with a ladder: every rung's sweep in turn, smallest first, then the fits across them.

Each rung is a whole sweep in runs/<ladder>/rungs/<rung>/ (resumable after kill -9 as any sweep: its study is
its only state), so `sweep status`, `sweep report` and promotion work on a rung alone. Before the largest rung
starts, the smaller rungs' lines predict its pick; the prediction is written to ladder.json and its point
enqueued as the largest rung's first trial, and a rerun keeps the prediction it finds there. ladder.json is
rewritten after every rung, so it always holds what has finished.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sweep.choice.pick import ratio_of
from sweep.files.rundir import RunDir, check_run_name
from sweep.ladder.gpus import rung_gpus
from sweep.ladder.record import (
    LadderMismatch,
    LadderSummary,
    RungResult,
    fit_rungs,
    predict,
    read_ladder,
    reference_point,
    rung_result,
    validate,
    write_ladder,
)
from sweep.ladder.rungs import RungSpec, rung_specs
from sweep.run.driver import SweepOutcome, SweepView, locked
from sweep.spec.spec import SweepSpec
from sweep.spec.trial_scale import base_shape


@dataclass(frozen=True, kw_only=True)
class RungStart:
    """How one rung's sweep is to run."""

    study_name: str
    fresh: bool
    first_points: Sequence[dict[str, Any]]
    """Trial params enqueued before the sampler's: the predicted point, at the largest rung."""


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
    spec: SweepSpec, run: RunDir, *, fresh: bool, view: SweepView, run_rung: RungRunner, max_gpus: int | None = None
) -> LadderOutcome:
    """Runs (or resumes) every rung of the spec's ladder in `run`, smallest first, and fits across them; `max_gpus`
    is the cluster's GPUs when known, for the plan of trials at once shown before the first rung."""
    rungs = rung_specs(spec)
    names = [check_run_name(f"{run.path.name}.{rung.name}", origin="the ladder's name and a rung's") for rung in rungs]
    with locked(run):
        if fresh and (trash := run.move_to_trash(keep=run.lock)) is not None:
            view.message(f"--fresh: the previous ladder is kept in {trash}")
        summary = _start(spec, run, rungs)
        write_ladder(run, summary)  # from the start: `sweep status` shows the ladder while its first rung runs
        for line in gpu_plan(rungs, max_gpus=max_gpus):
            view.message(line)
        outcomes: dict[str, SweepOutcome] = {}
        results: list[RungResult] = []
        for index, (rung, study_name) in enumerate(zip(rungs, names)):
            first: list[dict[str, Any]] = []
            if rung is rungs[-1]:
                summary = _predicted(summary, results, rung, run, view)
                first = [summary.prediction.enqueued] if summary.prediction is not None else []
            view.message(_rung_line(rung, index, len(rungs)))
            start = RungStart(study_name=study_name, fresh=fresh, first_points=first)
            outcome = run_rung(rung, run.rung(rung.name), start)
            outcomes[rung.name] = outcome
            if outcome.finished < outcome.planned:
                view.message(f"rung {rung.name}: {outcome.planned - outcome.finished} trial(s) unfinished; stopping")
                break
            results.append(rung_result(rung, outcome.summary, outcome.rows, _reference(summary)))
            summary = summary.model_copy(update={"rungs": list(results)})
            write_ladder(run, summary)
        summary = _finished(summary, rungs[-1], outcomes)
        write_ladder(run, summary)
    return LadderOutcome(summary=summary, outcomes=outcomes)


def _start(spec: SweepSpec, run: RunDir, rungs: list[RungSpec]) -> LadderSummary:
    """The ladder.json a run starts from: the one there (its prediction kept) or a new one."""
    planned = [rung.name for rung in rungs]
    sizes = {rung.name: rung.parameters for rung in rungs}
    if run.ladder_json.exists():
        stored = read_ladder(run)
        if stored.planned != planned:
            raise LadderMismatch(
                f"{run.ladder_json} is a ladder of rungs {stored.planned}, not {planned}; rerun with --fresh to "
                "start over, or --name for a new ladder"
            )
        return stored.model_copy(
            update={"rungs": [], "fits": {}, "validation": None, "sizes": sizes, "space": spec.space}
        )
    ladder = spec.ladder
    reference = ladder.reference
    lr, log_mix = reference_point(spec.space, None if reference is None else (reference.lr_fraction, reference.mix))
    largest = rungs[-1]
    return LadderSummary(
        target=ladder.target,
        forgetting_budget=spec.objective.forgetting_budget,
        reference_lr_fraction=lr,
        reference_mix=ratio_of(log_mix) if reference is None else reference.mix,
        trial_tokens_per_parameter=largest.trial_tokens / largest.parameters,
        pretrain_tokens_per_parameter=ladder.pretrain_tokens_per_parameter if ladder.builtin else None,
        planned=planned,
        space=spec.space,
        sizes=sizes,
        rungs=[],
    )


def _reference(summary: LadderSummary) -> tuple[float, float]:
    return summary.reference_lr_fraction, summary.reference_mix.log_ratio


def _predicted(
    summary: LadderSummary, smaller: list[RungResult], largest: RungSpec, run: RunDir, view: SweepView
) -> LadderSummary:
    """The summary with the largest rung's prediction, written before that rung starts (kept when already there)."""
    if summary.prediction is None:
        prediction, note = predict(smaller, largest)
        summary = summary.model_copy(update={"prediction": prediction, "prediction_note": note})
        write_ladder(run, summary)
    if summary.prediction is None:
        view.message(f"rung {largest.name}: {summary.prediction_note}")
    else:
        view.message(
            f"rung {largest.name}: predicted from {', '.join(summary.prediction.from_rungs)} and enqueued "
            f"first: {summary.prediction.enqueued} (written to {run.ladder_json.name} before it runs)"
        )
    return summary


def _finished(summary: LadderSummary, largest: RungSpec, outcomes: dict[str, SweepOutcome]) -> LadderSummary:
    """The fits over every rung and the validation of the prediction, once the last rung has finished."""
    if not summary.finished:
        return summary
    fits = fit_rungs(summary.rungs)
    validation = None
    if summary.prediction is not None:
        rows = outcomes[largest.name].rows
        validation = validate(summary.prediction, summary.rungs[-1], rows, largest.spec.space)
    return summary.model_copy(update={"fits": fits, "validation": validation})


def gpu_plan(rungs: list[RungSpec], *, max_gpus: int | None) -> list[str]:
    """Each rung's GPUs per trial and trials at once on `max_gpus` GPUs (None: not known yet), when trials run on
    GPUs; shown before the first rung starts."""
    if rungs[0].spec.execution.gpus == 0:
        return []
    cluster = f"{max_gpus} GPUs here" if max_gpus is not None else "as many as the cluster's GPUs hold"
    lines = [f"ladder plan (trials at once: at most execution.concurrency, {cluster}):"]
    for rung in rungs:
        spec = rung.spec
        shape = base_shape(spec.base.model, spec.base.builtin, spec.proxy.seq_len)
        plan = rung_gpus(rung.name, shape, spec.proxy, spec.execution, concurrency=spec.execution.concurrency,
                         max_gpus=max_gpus)  # fmt: skip
        lines.append(f"  {plan.line()}")
    return lines


def _rung_line(rung: RungSpec, index: int, count: int) -> str:
    proxy = rung.spec.proxy
    return (
        f"rung {rung.name} ({index + 1} of {count}): {rung.parameters:,} non-embedding parameters "
        f"(log N {math.log(rung.parameters):.2f}); trials of {proxy.steps} steps x {proxy.batch_size} x "
        f"{proxy.seq_len} = {rung.trial_tokens:,} tokens"
    )
