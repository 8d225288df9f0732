"""A plan and a job record read back for `sweep promote watch`, each checked against what it was made from before the
watch holds a run to it.

plan.json is made from best.json (or a ladder's law) and the request; a job's job.json from its plan. Both sit in a
run directory people copy and edit, and the watch's verdict rests on them: an upper bound edited to 0.9 or a
prediction nulled passed every evaluation, reordered validation sets gave negative forgetting. So the plan's promoted
point is what best.json gives now (itself checked against the study), or for a ladder its law's point is ladder.json's
law; its non-English share the proxy trial's, its predicted trajectory what that point gives, its validation sets in
the order Megatron-LM is given them, its iterations its tokens over its batch; and a job's watch and steps are what
its plan gives a submission or a rehearsal. A mismatch names the file, the field and both values.
"""

from __future__ import annotations

import math
from pathlib import Path

from pydantic import BaseModel

from sweep.choice.pick import PickSource
from sweep.files.records import CorruptFile, first_difference
from sweep.files.rundir import PlanDir, RunDir
from sweep.ladder.record import read_ladder
from sweep.promote.errors import PromotionError
from sweep.promote.launch.rehearse import RehearsalConfig
from sweep.promote.launch.watching import forced_overshoot, watch_config
from sweep.promote.plan.plan import Plan
from sweep.promote.plan.prediction import predicted_trajectory
from sweep.promote.point.point import PromotedPoint, proxy_trial, read_promoted
from train_entry.config import shown
from train_entry.fullrun.config import JobConfig
from train_entry.mix import MixRatio
from train_entry.trial_config import TrialConfig

PROMOTE_AGAIN = "promote the run again to write the plan from its sources"


def check_plan(run: RunDir, directory: PlanDir, plan: Plan) -> TrialConfig:
    """PromotionError naming plan.json, the field and both values unless `plan` is what its sources give; the proxy
    trial's config its point was planned from (what a rehearsal of it trains)."""
    path = directory.plan_json
    promoted = plan.sweep.promoted
    if promoted.ladder is None:
        trial = _check_point(run, path, promoted)
    else:
        _check_law(run, path, plan)
        trial = proxy_trial(run.path, promoted)
    _same_value(path, "sweep.non_english_share", plan.sweep.non_english_share, trial.non_english_share,
                "the promoted point's proxy trial")  # fmt: skip
    expected = predicted_trajectory(run, promoted, plan.tokens)
    if (plan.prediction is None) != (expected is None):
        _refuse(path, "prediction", plan.prediction, expected, "the promoted point")
    if plan.prediction is not None:
        _same(path, "prediction", plan.prediction, expected, "the promoted point")
    sides = [item.side for item in plan.validation]
    ordered = ["general", "domain"] + (["non_english"] if plan.sweep.non_english_share > 0 else [])
    _same_value(path, "run.data.valid (sides)", sides, ordered, "Megatron-LM's order of the plan's sets")
    iterations = math.ceil(plan.tokens / plan.global_batch_tokens)
    _same_value(path, "run.optimization.train_iters", plan.run.optimization.train_iters, iterations,
                "its tokens over its global batch")  # fmt: skip
    return trial


def _check_point(run: RunDir, path: Path, promoted: PromotedPoint) -> TrialConfig:
    """The plan's point is best.json's pick, or (a point of the observed source) its best observed trial's as
    --observed promotes it; the proxy trial's config at it."""
    ways = [False, True] if promoted.source is PickSource.OBSERVED else [False]
    first: tuple[PromotedPoint, TrialConfig] | None = None
    for observed in ways:
        try:
            point, trial = read_promoted(run.path, observed=observed, unconfirmed=True)
        except PromotionError:
            if observed is ways[-1] and first is None:
                raise
            continue
        if first_difference(promoted, point) is None:
            return trial
        first = first or (point, trial)
    _same(path, "sweep.promoted", promoted, first[0], "best.json (checked against the study)")
    return first[1]


def check_job(job_dir: Path, job: JobConfig, plan: Plan, trial: TrialConfig, *, rehearsal: bool) -> None:
    """PromotionError naming job.json, the field and both values unless its watch and steps are what `plan` gives
    a submission (or, `rehearsal`, a rehearsal of the proxy trial `trial`) with its stop setting."""
    path = job_dir / "job.json"
    stop = job.watch.stop_on_forgetting if job.watch is not None else False
    if rehearsal:
        config = RehearsalConfig()
        tokens = config.run_tokens(trial.proxy.seq_len)
        steps = config.steps
        expected = watch_config(
            plan, stop_on_forgetting=stop, tokens_per_iteration=tokens // steps, run_tokens=tokens
        )
        drill = forced_overshoot(expected, tokens)
        if job.watch is not None and job.watch.prediction == drill.prediction:  # --overshoot-drill's own bound
            expected = drill
    else:
        steps, expected = plan.run.optimization.train_iters, watch_config(plan, stop_on_forgetting=stop)
    _same_value(path, "steps", job.steps, steps, f"plan {plan.id}")
    if job.watch is not None:
        _same(path, "watch", job.watch, expected, f"plan {plan.id}")


def _check_law(run: RunDir, path: Path, plan: Plan) -> None:
    """A ladder's promoted point is its law's: the laws ladder.json holds, its prediction ladder.json's where that
    was made for the same target, and the point's figures and trajectory that prediction's."""
    law = plan.sweep.promoted.ladder
    try:
        fit = read_ladder(run).fit
    except CorruptFile as error:
        raise PromotionError(str(error)) from None
    if fit is None:
        raise PromotionError(f"{path}: promotes a ladder's law, but {run.ladder_json} holds none; {PROMOTE_AGAIN}")
    _same(path, "sweep.promoted.ladder.laws", law.laws, fit.laws, str(run.ladder_json))
    if law.prediction.target == fit.prediction.target and law.prediction.pick == fit.prediction.pick:
        _same(path, "sweep.promoted.ladder.prediction", law.prediction, fit.prediction, str(run.ladder_json))
    promoted, optimum, intervals = plan.sweep.promoted, law.prediction.optimum, law.prediction.intervals
    if optimum is None:
        raise PromotionError(f"{path}: promotes a ladder's law that gives no optimum; {PROMOTE_AGAIN}")
    figures = {
        "lr_fraction": (promoted.lr_fraction, optimum.lr_fraction),
        "mix (its domain share)": (promoted.mix.domain_share, MixRatio.parse(optimum.mix).domain_share),
        "probability_within_budget": (promoted.probability_within_budget, law.prediction.within_budget),
        "forgetting_interval": (
            promoted.forgetting_interval,
            None if intervals is None else (intervals.forgetting.low, intervals.forgetting.high),
        ),
    }
    for key, (stored, expected) in figures.items():
        _same_value(path, f"sweep.promoted.{key}", stored, expected, "its law's prediction")


def _same(path: Path, where: str, stored: BaseModel, expected: BaseModel, source: str) -> None:
    mismatch = first_difference(stored, expected)
    if mismatch is not None:
        key, value, given = mismatch
        _refuse(path, f"{where}.{key}" if key else where, value, given, source)


def _same_value(path: Path, where: str, stored: object, expected: object, source: str) -> None:
    if stored != expected:
        _refuse(path, where, stored, expected, source)


def _refuse(path: Path, where: str, stored: object, expected: object, source: str) -> None:
    def brief(value: object) -> str:
        return shown(value.model_dump(mode="json") if isinstance(value, BaseModel) else value, 80)

    raise PromotionError(f"{path}: {where} is {brief(stored)}, but {source} gives {brief(expected)}; {PROMOTE_AGAIN}")
