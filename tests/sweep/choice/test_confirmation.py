"""Confirmation of the pick at fresh seeds: the rule on scripted rows (confirmed, next point, none found, pending,
a diverged re-run), and the searcher enqueueing it in a real study, never pruned, resumable after a kill."""

from __future__ import annotations

import pytest
from ray.tune.search import Searcher
from scripted import BASE, STEPS, scripted, smooth_rows
from scripted import trial_row as row

from sweep.choice.best import best_summary, trials_expected
from sweep.choice.confirmation import Outcome, Setting, confirmation_state
from sweep.choice.observed import select
from sweep.choice.surrogate import point_key
from sweep.run.searcher import StudySearcher, enqueue_confirmations, is_confirmation
from sweep.space import SearchSpace
from sweep.study.config import ConfirmationConfig, PickConfig
from sweep.study.record import Attr, Status
from sweep.study.trial import NUMBER, run_study_trial

MIXES = ["4:1", "1:1", "1:4"]
SPACE = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2, "log": True}, "mix": MIXES})
BUDGET = 0.02
SETTING = Setting(
    space=SPACE,
    forgetting_budget=BUDGET,
    pick=PickConfig(),
    config=ConfirmationConfig(seeds=2, candidates=2),
    first_seed=1,
)


def searched() -> list:
    return smooth_rows(0.2, MIXES, forgetting_slope=0.2)


def confirmations(state, round_, forgetting, *, first=100, status=Status.COMPLETED) -> list:
    """The round's trials at the pick of `state`, at its due seeds, measuring `forgetting`."""
    point = state.pick.point
    return [
        row(first + k, point.lr_fraction, point.mix, 0.2, value, status=status, seed=seed, confirms=round_)
        for k, (seed, value) in enumerate(zip(state.due.seeds, forgetting))
    ]


def test_the_pick_is_confirmed_when_its_fresh_seeds_stay_within_the_budget():
    rows = searched()
    first = confirmation_state(rows, SETTING)
    assert first.confirmation.outcome is Outcome.PENDING and first.due.round == 0
    assert first.due.seeds == [1, 2]  # seeds no trial of the sweep used
    done = confirmation_state([*rows, *confirmations(first, 0, [0.015, 0.017])], SETTING)
    assert done.confirmation.outcome is Outcome.CONFIRMED and done.due is None
    confirmed = done.confirmation.confirmed
    assert (confirmed.lr_fraction, confirmed.mix) == (first.pick.point.lr_fraction, first.pick.point.mix)
    assert confirmed.forgetting.mean == pytest.approx(0.016) and confirmed.forgetting.sd == pytest.approx(
        0.0014142, 1e-3
    )
    assert confirmed.predicted_forgetting == pytest.approx(first.pick.forgetting.mean)
    assert done.pick.point.lr_fraction == first.pick.point.lr_fraction  # best.json's pick is the confirmed point


def test_a_pick_confirmed_over_the_budget_gives_way_to_the_surrogates_next_pick_at_new_seeds():
    rows = searched()
    first = confirmation_state(rows, SETTING)
    over = confirmations(first, 0, [0.03, 0.032])
    second = confirmation_state([*rows, *over], SETTING)
    assert second.confirmation.outcome is Outcome.PENDING and second.due.round == 1
    assert second.due.seeds == [3, 4]
    moved = point_key(second.pick.point.lr_fraction, second.pick.point.domain_share)
    assert moved != point_key(first.pick.point.lr_fraction, first.pick.point.domain_share)
    # fitted to the pool's trials alone: the confirmation trials' figures are on their draw, another text
    assert second.pick.fit.points == len(rows)
    assert [r.within_budget for r in second.confirmation.rounds] == [False]


def test_when_every_point_within_the_limit_ends_over_the_budget_no_confirmed_point_is_found():
    rows = searched()
    first = confirmation_state(rows, SETTING)
    rows += confirmations(first, 0, [0.03, 0.031])
    second = confirmation_state(rows, SETTING)
    rows += confirmations(second, 1, [0.025, 0.027], first=200)
    last = confirmation_state(rows, SETTING)
    assert last.confirmation.outcome is Outcome.NOT_FOUND and last.due is None  # candidates: 2, no third round
    assert "none of the 2 point(s) confirmed" in last.confirmation.reason
    assert "0.0260" in last.confirmation.reason and "over the budget 0.02" in last.confirmation.reason


def test_a_round_half_run_asks_only_for_its_missing_seed():
    rows = searched()
    first = confirmation_state(rows, SETTING)
    half = confirmations(first, 0, [0.015])
    state = confirmation_state([*rows, *half], SETTING)
    assert state.confirmation.outcome is Outcome.PENDING and state.due.seeds == [2]


def test_a_confirmation_trial_that_diverged_does_not_confirm_the_pick():
    rows = searched()
    first = confirmation_state(rows, SETTING)
    trials = confirmations(first, 0, [0.015, 0.016])
    trials[1] = trials[1].model_copy(update={"status": Status.DIVERGED})
    state = confirmation_state([*rows, *trials], SETTING)
    assert state.confirmation.outcome is Outcome.PENDING and state.due.round == 1
    assert not state.confirmation.rounds[0].within_budget


def _finish(sweep, number, *, gain, forgetting):
    return run_study_trial(sweep, number, scripted([gain] * len(STEPS), forgetting=forgetting), base=BASE)


def test_the_searcher_confirms_the_pick_after_the_main_trials_never_prunes_it_and_resumes_it(open_sweep):
    sweep = open_sweep(
        num_trials=2,
        confirmation={"seeds": 2, "candidates": 1},
        forgetting_guard={"margin": 0.0, "min_steps": 1},
        pruner={"type": "none"},
    )
    searcher = StudySearcher(sweep)
    assert searcher.to_run == 4 and searcher.most_to_run == 4
    mains = [searcher.suggest(f"main-{k}")[NUMBER] for k in range(2)]
    _finish(sweep, mains[0], gain=0.2, forgetting=0.01)
    assert searcher.suggest("early") is None  # the pick depends on trial 1 too
    _finish(sweep, mains[1], gain=0.1, forgetting=0.005)
    first = searcher.suggest("confirm-0")[NUMBER]
    frozen = sweep.frozen(first)
    assert frozen.params == sweep.frozen(mains[0]).params  # the pick: the best observed trial with 2 points
    assert frozen.user_attrs[Attr.CONFIRMS.value] == 0 and frozen.user_attrs[Attr.SEED.value] == 1
    # Over the budget at every evaluation, with a zero guard margin: a main trial would be stopped at once.
    assert _finish(sweep, first, gain=0.2, forgetting=0.05) is Status.COMPLETED

    # The driver is killed with the second confirmation trial asked: a new one re-runs it under its number.
    second = searcher.suggest("confirm-1")[NUMBER]
    resumed = StudySearcher(sweep)
    assert resumed.to_run == 1 and resumed.suggest("again")[NUMBER] == second
    assert sweep.frozen(second).user_attrs[Attr.SEED.value] == 2
    _finish(sweep, second, gain=0.2, forgetting=0.04)
    assert resumed.suggest("after") == Searcher.FINISHED  # over the budget, and candidates: 1
    assert enqueue_confirmations(sweep) == 0
    assert sum(is_confirmation(t) for t in sweep.trials()) == 2


def test_the_trials_a_sweep_ends_with_follow_its_confirmation_rounds(open_sweep):
    """planned_trials counts one round; a second round adds its seeds, and a sweep with nothing left to confirm is
    finished at the trials it ran, not waiting for a round that will never come."""
    plan = open_sweep(num_trials=12, confirmation={"seeds": 2, "candidates": 2}).plan
    rows = [r.model_copy(update={"lr_fraction": r.lr_fraction * 1.5}) for r in searched()]  # inside 0.05-0.30
    setting = Setting.of(plan)

    def expected(rows):
        selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
        return trials_expected(best_summary(selection, rows, plan), rows, plan)

    assert expected(rows) == plan.planned_trials == 14
    rows += confirmations(confirmation_state(rows, setting), 0, [0.05, 0.05])
    assert expected(rows) == 16  # a second point to confirm
    rows += confirmations(confirmation_state(rows, setting), 1, [0.05, 0.05], first=200)
    assert expected(rows) == 16 and confirmation_state(rows, setting).confirmation.outcome is Outcome.NOT_FOUND


def test_a_confirmation_outside_its_predicted_interval_says_so_on_which_side():
    """Issue 49: both confirmation trials measured above the predicted interval and nothing said so."""
    from reports.decision import decision_lines, outcome_words

    rows = searched()
    first = confirmation_state(rows, SETTING)
    predicted = first.pick.gain
    texted = [
        r.model_copy(update={"domain_gain": predicted.high + 0.05, "gain_text_error": 0.001})
        for r in confirmations(first, 0, [first.pick.forgetting.mean] * 2)
    ]
    done = confirmation_state([*rows, *texted], SETTING)
    held = done.confirmation.confirmed

    low, high = held.gain_interval
    draw = 0.001  # the draw's own text error widens the interval of the pool's prediction
    sd = (predicted.sd**2 + predicted.noise_sd**2 / 2 + predicted.text_sd**2 + draw**2) ** 0.5
    assert (low, high) == pytest.approx((predicted.mean - 1.6448536 * sd, predicted.mean + 1.6448536 * sd))
    assert held.gain_against.value == "above" and held.forgetting_against.value == "inside" and held.text == "draw 1"
    words = outcome_words(done.confirmation)
    assert words.endswith(f"held, domain_gain above its predicted interval [{low:.4f}, {high:.4f}]")
    summary = best_summary(select([*rows, *texted], forgetting_budget=BUDGET, space=SPACE), [*rows, *texted],
                           _plan(confirmation={"seeds": 2, "candidates": 2}))  # fmt: skip
    assert any(f"domain_gain above its predicted interval [{low:.4f}" in line for line in decision_lines(summary))


def _plan(**search):
    from scripted import spec_with

    return spec_with(lr_fraction={"low": 0.05, "high": 0.2, "log": True}, mix=MIXES, **search).plan()
