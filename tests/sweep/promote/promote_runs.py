"""A finished sweep's run directory, written with the sweep's own types: best.json by sweep.choice.best
and the promoted point's resolved trial config, as sweep run leaves them. A module of its own (not
conftest) so that tests import it by a name no other test folder uses."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import optuna
from optuna.trial import TrialState

from sweep.choice.best import BestSummary, Cost, Evidence, best_summary, write_best
from sweep.choice.confirmation import Confirmation, ConfirmedPoint, Measured, Outcome
from sweep.choice.observed import select
from sweep.choice.pick import Pick, PickedPoint, PickSource, Prediction, make_pick
from sweep.choice.surrogate import Predictions
from sweep.choice.verdict import headline
from sweep.files.rundir import RunDir, RunRecord
from sweep.space import SearchSpace
from sweep.spec.spec import NonEnglishConfig, SweepSpec, spec_content
from sweep.study.config import PickConfig
from sweep.study.record import Attr, Status, base_attr, base_losses_of
from sweep.study.row import TrialRow
from sweep.study.run_study import open_run
from sweep.study.study import open_study
from sweep.study.table import trial_rows
from tests.sweep.scripted import spec_with
from train_entry.file_format import TRIAL_CONFIG
from train_entry.mix import MixRatio
from train_entry.trial_config import BaseLosses, CorpusPrefixes, TrialConfig

MAX_LR = 3e-3
"""The default spec's built-in base max_lr: the proxy's, not the target's."""
BUDGET = 0.02
"""The run's forgetting budget (spec_with's)."""
SPACE = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2}, "mix": ["2:1", "1:1", "1:2", "1:4"]})
SPEC_OF_STUDY = spec_with(
    lr_fraction=SPACE.lr_fraction.model_dump(), mix=[str(mix) for mix in SPACE.mix], confirmation={"seeds": 2}
)
"""The sweep the run's study was made by (the default spec, the space above, two confirmation seeds)."""
BASE = BaseLosses(domain_loss=3.9, general_loss=3.4)
"""The base's losses every trial of the run stored and its trial config was resolved with."""


def write_run(
    run_dir: Path,
    *,
    lr_fraction: float = 0.1,
    mix: str = "1:1",
    non_english_share: float = 0.1,
    feasible: bool = True,
    pick: Pick | None = None,
    confirmation: Confirmation | None = None,
    spec: SweepSpec = SPEC_OF_STUDY,
    base: BaseLosses = BASE,
) -> Path:
    """runs/<name>/ with best.json and trials/0007/trial_config.json; no best observed trial when not feasible.

    best.json's pick is `pick`, or what the sweep's own code picks from its one trial: the best observed trial;
    its confirmation is `confirmation`, or two fresh seeds that held the pick within the budget. Its study, spec copy
    and trial config are of `spec` and `base` (the base's losses each trial stored). A run that has a study already (a
    ladder's rung, its scripted trials) keeps it, and best.json's trial row and trial 7's config are resolved from
    it."""
    run = RunDir(run_dir)
    studied = run.run_json.exists()
    if studied:
        row = _studied_row(run, 7)
        lr_fraction, mix = row.lr_fraction, row.mix
    else:
        row = TrialRow(
            number=7, status=Status.COMPLETED, reason=None, lr_fraction=lr_fraction,
            peak_lr=lr_fraction * spec.base.max_lr,
            mix=mix, domain_share=MixRatio.parse(mix).domain_share, domain_gain=0.21,
            forgetting=0.015 if feasible else 0.08, domain_loss=3.1, general_loss=3.5, text="pool", best_domain_gain=0.21,
            best_step=200, steps=200, stopped_step=None, tokens_seen=204800, wall_seconds=60.0, attempts=1, seed=0,
        )  # fmt: skip
    ratio = MixRatio.parse(mix)
    run.trial(7).mkdir(parents=True, exist_ok=True)
    verdict = "best observed trial: 7" if feasible else "no completed trial is within the forgetting budget 0.0200"
    pick = pick or make_pick(
        [row], space=spec.space, budget=0.02, config=PickConfig(), observed=row if feasible else None
    )
    confirmation = confirmation or confirmed(pick)
    summary = BestSummary(
        verdict=headline(pick, confirmation, budget=0.02, max_lr=spec.base.max_lr),
        pick=pick,
        confirmation=confirmation,
        pick_trials=[7] if pick.point is not None and pick.point.trials else [],
        boundary_warnings=[],
        best_observed=row if feasible else None,
        least_forgetting=None if feasible else row,
        evidence=Evidence(
            forgetting_budget=0.02, trials={}, feasible_completed=int(feasible), best_observed=verdict, runner_up=None
        ),
        pareto_front=[row],
        cost=Cost(tokens_used=204800, tokens_saved_by_pruning=0, full_trial_tokens=204800),
    )
    write_best(summary, run)
    if studied:  # a ladder's rung keeps the study its scripted trials made: trial 7's config is resolved from it
        _, sweep = open_run(run)
        base, proxy, max_lr = base_losses_of(sweep.frozen(7), study=run.path.name), sweep.plan.proxy, sweep.plan.max_lr
    else:
        write_study(run, row, summary.confirmation, spec=spec, base=base)
        write_spec_copy(run, spec, non_english_share)
        proxy, max_lr = spec.proxy, spec.base.max_lr
    prefixes = CorpusPrefixes(general="/cache/general", domain="/cache/domain", non_english="/cache/non_english")
    config = TrialConfig(
        lr_fraction=lr_fraction, mix=ratio, base_dir="/cache/base", tokenizer_dir="/cache/tokenizer", max_lr=max_lr,
        base_losses=base, final_base_losses=base, train=prefixes, valid=prefixes, non_english_share=non_english_share,
        proxy=proxy,
        output_dir=str(run.trial(7)),
    )  # fmt: skip
    run.trial_config(7).write_text(TRIAL_CONFIG.dumps(config))
    return run_dir


def _studied_row(run: RunDir, number: int) -> TrialRow:
    _, sweep = open_run(run)
    return next(row for row in trial_rows(sweep) if row.number == number)


def write_spec_copy(run: RunDir, spec: SweepSpec, non_english_share: float) -> None:
    """The spec copy a run keeps: the study's spec, with the trial config's non-English share and no W&B."""
    data = spec.model_dump(mode="json", exclude_none=True)
    data["tracking"] = {}
    if non_english_share > 0:
        data["data"]["non_english"]["share"] = non_english_share
    else:
        del data["data"]["non_english"]
    run.write_spec_copy(SweepSpec.model_validate(data))


def write_study(
    run: RunDir, row: TrialRow, confirmation: Confirmation, *, spec: SweepSpec = SPEC_OF_STUDY, base: BaseLosses = BASE
) -> None:
    """run.json and the study best.json summarises, as `sweep run` leaves them: seven trials that failed before
    choosing a point, trial 7 at the row's point with its metrics, and each confirmation round's trials."""
    record = RunRecord(study_name=run.path.name, storage=None)
    run.write_record(record)
    sweep = open_study(spec.plan(), url=record.url(run), name=record.study_name)
    space = spec.space
    for _ in range(7):
        sweep.study.add_trial(optuna.trial.create_trial(state=TrialState.FAIL))
    sweep.study.add_trial(
        _trial(space, row.lr_fraction, row.mix, row.domain_gain, row.forgetting, base, row=row, seed=0)
    )
    for round_ in confirmation.rounds:
        for seed in round_.seeds:
            measured = (round_.gain.mean, round_.forgetting.mean) if round_.gain and round_.forgetting else (0.0, 1.0)
            sweep.study.add_trial(
                _trial(space, round_.lr_fraction, round_.mix, *measured, base, text="draw 1", seed=seed, confirms=0)
            )


def _trial(
    space: SearchSpace,
    lr_fraction: float,
    mix: str,
    gain: float,
    forgetting: float,
    base: BaseLosses,
    row: TrialRow | None = None,
    *,
    text: str = "pool",
    **attrs,
):
    """A completed trial at the point as record_result stores it, its final figures on `text` those of its last
    evaluation; with `row`, holding every figure of it (as best.json's rows are the study's)."""
    last = {"step": 200, "tokens_seen": 204800, "domain_gain": gain, "forgetting": forgetting}
    figures = {"text": text, "step": 200, "domain_gain": gain, "forgetting": forgetting, "text_error": None}
    if row is not None:
        last |= {"domain_loss": row.domain_loss, "general_loss": row.general_loss}
        figures |= {"domain_loss": row.domain_loss, "general_loss": row.general_loss}
        attrs |= {
            Attr.BEST.value: {"domain_gain": row.best_domain_gain, "step": row.best_step},
            Attr.WALL_SECONDS.value: row.wall_seconds,
            Attr.ATTEMPTS.value: row.attempts,
        }
    return optuna.trial.create_trial(
        state=TrialState.COMPLETE, value=gain, params=space.params_of(lr_fraction, MixRatio.parse(mix)),
        distributions=space.distributions, user_attrs={
            Attr.STATUS.value: Status.COMPLETED.value, Attr.LAST.value: last, Attr.FIGURES.value: figures,
            Attr.STEPS.value: 200, Attr.BASE_LOSSES.value: base_attr(base), **attrs,
        },
    )  # fmt: skip


def surrogate_pick(
    lr_fraction: float, mix: str, *, trials: tuple[int, ...] = (), forgetting: float = 0.016, budget: float = BUDGET
) -> Pick:
    """A pick of the surrogate at a point between the tried ones, with its intervals and P as the surrogate's own
    constructors make them from a mean and a spread (a seed noise as large as the spread)."""

    def estimate(mean: float, sd: float) -> Predictions:
        return Predictions(mean=np.array([mean]), sd=np.array([sd]), noise_sd=sd)

    gain, forgotten = estimate(0.23, 0.004), estimate(forgetting, 0.0015)

    point = PickedPoint(
        lr_fraction=lr_fraction, mix=mix, domain_share=MixRatio.parse(mix).domain_share, trials=list(trials),
        measured_gain=None, measured_forgetting=None,
    )  # fmt: skip
    return Pick(
        source=PickSource.SURROGATE,
        point=point,
        reason="12 of 205 candidate points are within the budget with probability >= 0.9",
        rule="the rule",
        min_probability=0.9,
        gain=Prediction.at(gain, 0),
        forgetting=Prediction.at(forgotten, 0),
        probability_within_budget=float(forgotten.probability_at_most(budget)[0]),
    )


def confirmed(pick: Pick, *, forgetting: float = 0.017, budget: float = 0.02) -> Confirmation:
    """The pick's confirmation: two fresh seeds measured `forgetting` on average (within `budget`: confirmed)."""
    within = forgetting <= budget
    point = pick.point
    round_ = ConfirmedPoint(
        round=0, lr_fraction=point.lr_fraction if point else 0.1, mix=point.mix if point else "1:1",
        domain_share=point.domain_share if point else 0.5, trials=[8, 9], seeds=[3, 4],
        predicted_gain=pick.gain.mean if pick.gain else None,
        predicted_forgetting=pick.forgetting.mean if pick.forgetting else None,
        probability_within_budget=pick.probability_within_budget, gain=Measured(mean=0.22, sd=0.003),
        forgetting=Measured(mean=forgetting, sd=0.001), within_budget=within,
    )  # fmt: skip
    outcome = Outcome.CONFIRMED if within else Outcome.NOT_FOUND
    return Confirmation(outcome=outcome, reason=f"round 0: forgetting {forgetting}", rounds=[round_])


def promotable(run_dir: Path) -> Path:
    """A run with a study and a spec copy (tests/reports/test_report.py's make_run) finished as `sweep run` finishes
    one: best.json written from its study with the sweep's own functions, and each completed trial's resolved config
    as the trial wrote it (its point, seed and stored base losses, the study's recipe, the spec copy's share)."""
    run = RunDir(run_dir)
    _, sweep = open_run(run)
    rows, plan = trial_rows(sweep), sweep.plan
    selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
    write_best(best_summary(selection, rows, plan), run)
    non_english = (spec_content(run.spec_copy, copy=True).get("data") or {}).get("non_english")
    share = non_english.get("share", NonEnglishConfig.model_fields["share"].default) if non_english else 0.0
    prefixes = CorpusPrefixes(general="/cache/general", domain="/cache/domain", non_english="/cache/non_english")
    for row in rows:
        if row.status is not Status.COMPLETED:
            continue
        run.trial(row.number).mkdir(parents=True, exist_ok=True)
        config = TrialConfig(
            lr_fraction=row.lr_fraction, mix=MixRatio.parse(row.mix), base_dir="/cache/base",
            tokenizer_dir="/cache/tokenizer", max_lr=plan.max_lr, seed=row.seed,
            base_losses=(base := base_losses_of(sweep.frozen(row.number), study=run.path.name)),
            final_base_losses=base, train=prefixes, valid=prefixes, valid_draw=row.valid_draw,
            draw_valid=prefixes if row.valid_draw else None, non_english_share=share, proxy=plan.proxy,
            output_dir=str(run.trial(row.number)),
        )  # fmt: skip
        run.trial_config(row.number).write_text(TRIAL_CONFIG.dumps(config))
    return run_dir
