"""A finished sweep's run directory, written with the sweep's own types: best.json by sweep.choice.best
and the promoted point's resolved trial config, as sweep run leaves them. A module of its own (not
conftest) so that tests import it by a name no other test folder uses."""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.trial import TrialState

from sweep.choice.best import BestSummary, Cost, Evidence, write_best
from sweep.choice.confirmation import Confirmation, ConfirmedPoint, Measured, Outcome
from sweep.choice.pick import Pick, PickedPoint, PickSource, Prediction, make_pick
from sweep.choice.verdict import headline
from sweep.files.rundir import RunDir, RunRecord
from sweep.space import SearchSpace
from sweep.study.config import PickConfig
from sweep.study.record import Attr, Status
from sweep.study.row import TrialRow
from sweep.study.study import open_study
from tests.sweep.scripted import spec_with
from train_entry.file_format import TRIAL_CONFIG
from train_entry.mix import MixRatio
from train_entry.trial_config import BaseLosses, CorpusPrefixes, ProxyConfig, TrialConfig

MAX_LR = 3e-3
"""The default spec's built-in base max_lr: the proxy's, not the target's."""
PROXY = ProxyConfig(steps=200, seq_len=128, batch_size=8, warmup_steps=20, eval_interval=50, min_lr_ratio=0.1)
SPACE = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2}, "mix": ["2:1", "1:1", "1:2", "1:4"]})


def write_run(
    run_dir: Path,
    *,
    lr_fraction: float = 0.1,
    mix: str = "1:1",
    non_english_share: float = 0.1,
    feasible: bool = True,
    pick: Pick | None = None,
    confirmation: Confirmation | None = None,
) -> Path:
    """runs/<name>/ with best.json and trials/0007/trial_config.json; no best observed trial when not feasible.

    best.json's pick is `pick`, or what the sweep's own code picks from its one trial: the best observed trial;
    its confirmation is `confirmation`, or two fresh seeds that held the pick within the budget."""
    ratio = MixRatio.parse(mix)
    row = TrialRow(
        number=7, status=Status.COMPLETED, reason=None, lr_fraction=lr_fraction, peak_lr=lr_fraction * MAX_LR,
        mix=mix, domain_share=ratio.domain_share, domain_gain=0.21, forgetting=0.015 if feasible else 0.08,
        domain_loss=3.1, general_loss=3.5, text="pool", best_domain_gain=0.21, best_step=200, steps=200,
        stopped_step=None, tokens_seen=204800, wall_seconds=60.0, attempts=1,
    )  # fmt: skip
    run = RunDir(run_dir)
    run.trial(7).mkdir(parents=True, exist_ok=True)
    verdict = "best observed trial: 7" if feasible else "no completed trial is within the forgetting budget 0.0200"
    pick = pick or make_pick([row], space=SPACE, budget=0.02, config=PickConfig(), observed=row if feasible else None)
    confirmation = confirmation or confirmed(pick)
    summary = BestSummary(
        verdict=headline(pick, confirmation, budget=0.02, max_lr=MAX_LR),
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
    if not run.run_json.exists():  # a ladder's rung keeps the study its scripted trials made
        write_study(run, row, summary.confirmation)
    prefixes = CorpusPrefixes(general="/cache/general", domain="/cache/domain", non_english="/cache/non_english")
    config = TrialConfig(
        lr_fraction=lr_fraction, mix=ratio, base_dir="/cache/base", tokenizer_dir="/cache/tokenizer", max_lr=MAX_LR,
        base_losses=BaseLosses(domain_loss=3.9, general_loss=3.4),
        final_base_losses=BaseLosses(domain_loss=3.9, general_loss=3.4), train=prefixes, valid=prefixes,
        non_english_share=non_english_share, proxy=PROXY, output_dir=str(run.trial(7)),
    )  # fmt: skip
    run.trial_config(7).write_text(TRIAL_CONFIG.dumps(config))
    return run_dir


def write_study(run: RunDir, row: TrialRow, confirmation: Confirmation) -> None:
    """run.json and the study best.json summarises, as `sweep run` leaves them: seven trials that failed before
    choosing a point, trial 7 at the row's point with its metrics, and each confirmation round's trials."""
    record = RunRecord(study_name=run.path.name, storage=None)
    run.write_record(record)
    space = {"lr_fraction": SPACE.lr_fraction.model_dump(), "mix": [str(mix) for mix in SPACE.mix]}
    spec = spec_with(**space, confirmation={"seeds": 2})
    sweep = open_study(spec.plan(), url=record.url(run), name=record.study_name)
    for _ in range(7):
        sweep.study.add_trial(optuna.trial.create_trial(state=TrialState.FAIL))
    sweep.study.add_trial(_trial(SPACE, row.lr_fraction, row.mix, row.domain_gain, row.forgetting, seed=0))
    for round_ in confirmation.rounds:
        for seed in round_.seeds:
            measured = (round_.gain.mean, round_.forgetting.mean) if round_.gain and round_.forgetting else (0.0, 1.0)
            sweep.study.add_trial(
                _trial(SPACE, round_.lr_fraction, round_.mix, *measured, text="draw 1", seed=seed, confirms=0)
            )


def _trial(space: SearchSpace, lr_fraction: float, mix: str, gain: float, forgetting: float, *, text="pool", **attrs):
    """A completed trial as record_result stores it, its figures on `text` those of its last evaluation."""
    last = {"step": 200, "tokens_seen": 204800, "domain_gain": gain, "forgetting": forgetting}
    figures = {"text": text, "step": 200, "domain_gain": gain, "forgetting": forgetting, "text_error": None}
    return optuna.trial.create_trial(
        state=TrialState.COMPLETE, value=gain, params=space.params_of(lr_fraction, MixRatio.parse(mix)),
        distributions=space.distributions, user_attrs={
            Attr.STATUS.value: Status.COMPLETED.value, Attr.LAST.value: last, Attr.FIGURES.value: figures,
            Attr.STEPS.value: 200, **attrs,
        },
    )  # fmt: skip


def surrogate_pick(lr_fraction: float, mix: str, *, trials: tuple[int, ...] = ()) -> Pick:
    """A pick of the surrogate at a point between the tried ones, with its intervals."""

    def estimate(mean: float, sd: float) -> Prediction:
        return Prediction(
            mean=mean, sd=sd, noise_sd=sd, low=mean - 1.645 * sd, high=mean + 1.645 * sd,
            remeasured_low=mean - 2.33 * sd, remeasured_high=mean + 2.33 * sd,
        )  # fmt: skip

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
        gain=estimate(0.23, 0.004),
        forgetting=estimate(0.016, 0.0015),
        probability_within_budget=0.93,
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
