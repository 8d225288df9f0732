"""Every pruner passes the same suite, driven by scripted trials against real RDB storage."""

import pytest
from optuna.trial import TrialState
from scripted import BASE, STEPS, scripted

from sweep.study.record import Attr, Status
from sweep.study.trial import run_study_trial

PRUNERS = ["median", "percentile", "successive_halving", "hyperband", "wilcoxon"]
GOOD = [[0.10 + 0.05 * k + 0.01 * i for k in range(len(STEPS))] for i in range(8)]
"""Eight completed trials whose domain_gain rises with every evaluation."""


def pruner(kind):
    """Each pruner with the settings it has: a setting it does not use would be refused."""
    startup = {"n_startup_trials": 2, "n_warmup_steps": 0}
    return {"type": kind, **{"median": startup, "percentile": startup, "wilcoxon": {"n_warmup_steps": 0}}.get(kind, {})}


def run_good_trials(sweep):
    for gains in GOOD:
        assert run_study_trial(sweep, sweep.ask().number, scripted(gains), base=BASE) is Status.COMPLETED


@pytest.mark.parametrize("kind", PRUNERS)
def test_a_trial_far_below_the_others_is_pruned_with_its_intermediate_values(open_sweep, kind):
    sweep = open_sweep(sampler="random", pruner=pruner(kind), forgetting_guard=None)
    run_good_trials(sweep)
    number = sweep.ask().number
    status = run_study_trial(sweep, number, scripted([-0.2] * len(STEPS)), base=BASE)
    frozen = sweep.frozen(number)
    assert status is Status.PRUNED
    assert frozen.state is TrialState.PRUNED
    assert frozen.intermediate_values  # the sampler and optuna-dashboard see its curve
    assert set(frozen.intermediate_values.values()) == {-0.2}
    assert frozen.user_attrs[Attr.REASON.value].startswith(f"pruned by the {kind} pruner at step")
    assert frozen.user_attrs[Attr.STEPS.value] < STEPS[-1]


@pytest.mark.parametrize("kind", [*PRUNERS, "none"])
def test_a_trial_better_than_all_others_runs_its_full_budget(open_sweep, kind):
    sweep = open_sweep(sampler="random", pruner=pruner(kind), forgetting_guard=None)
    run_good_trials(sweep)
    number = sweep.ask().number
    assert (
        run_study_trial(sweep, number, scripted([0.5 + 0.05 * k for k in range(len(STEPS))]), base=BASE)
        is Status.COMPLETED
    )
    frozen = sweep.frozen(number)
    assert frozen.state is TrialState.COMPLETE
    assert frozen.value == pytest.approx(0.5 + 0.05 * (len(STEPS) - 1))  # the final domain_gain is the objective


def test_pruner_none_never_prunes(open_sweep):
    sweep = open_sweep(sampler="random", pruner=pruner("none"), forgetting_guard=None)
    run_good_trials(sweep)
    assert run_study_trial(sweep, sweep.ask().number, scripted([-0.2] * len(STEPS)), base=BASE) is Status.COMPLETED


def test_median_pruner_waits_for_warmup_steps(open_sweep):
    sweep = open_sweep(
        sampler="random", pruner={"type": "median", "n_startup_trials": 2, "n_warmup_steps": 150}, forgetting_guard=None
    )
    run_good_trials(sweep)
    number = sweep.ask().number
    assert run_study_trial(sweep, number, scripted([-0.2] * len(STEPS)), base=BASE) is Status.PRUNED
    assert sweep.frozen(number).user_attrs[Attr.STEPS.value] == 150  # not before the warmup ends


@pytest.mark.parametrize("guard", [None, {"margin": 0.0, "min_steps": 1}])
def test_the_final_evaluation_is_never_pruned(open_sweep, guard):
    # Warmup up to the last evaluation: only the final step could be judged, and it must not be.
    sweep = open_sweep(
        sampler="random",
        pruner={"type": "median", "n_startup_trials": 2, "n_warmup_steps": STEPS[-2] + 1},
        forgetting_guard=guard,
    )
    run_good_trials(sweep)
    number = sweep.ask().number

    def over_budget_at_the_end(step):
        return 0.5 if step == STEPS[-1] else 0.0

    trial = scripted([-0.2] * len(STEPS), forgetting=over_budget_at_the_end)
    assert run_study_trial(sweep, number, trial, base=BASE) is Status.COMPLETED
    assert sweep.frozen(number).state is TrialState.COMPLETE


def test_forgetting_guard_stops_a_trial_over_budget_plus_margin_after_min_steps(open_sweep):
    sweep = open_sweep(sampler="random", pruner=pruner("none"), forgetting_guard={"margin": 0.05, "min_steps": 100})
    # 0.2 forgetting from the start: the guard may act only from step 100 on.
    number = sweep.ask().number
    status = run_study_trial(sweep, number, scripted([0.3] * len(STEPS), forgetting=0.2), base=BASE)
    frozen = sweep.frozen(number)
    assert status is Status.PRUNED and frozen.state is TrialState.PRUNED
    assert frozen.user_attrs[Attr.STEPS.value] == 100
    assert frozen.user_attrs[Attr.REASON.value].startswith("forgetting guard at step 100: forgetting 0.2000 now")
    assert "over budget 0.02 + margin 0.05" in frozen.user_attrs[Attr.REASON.value]


@pytest.mark.parametrize(("forgetting", "expected"), [(0.069, Status.COMPLETED), (0.071, Status.PRUNED)])
def test_forgetting_guard_lets_a_trial_within_the_margin_run(open_sweep, forgetting, expected):
    sweep = open_sweep(sampler="random", pruner=pruner("none"), forgetting_guard={"margin": 0.05, "min_steps": 1})
    assert (
        run_study_trial(sweep, sweep.ask().number, scripted([0.3] * len(STEPS), forgetting=forgetting), base=BASE)
        is expected
    )


def test_the_guarded_pruner_is_the_studys_one_decider_and_optuna_sees_its_decision(open_sweep):
    sweep = open_sweep(sampler="random", pruner=pruner("none"), forgetting_guard={"margin": 0.0, "min_steps": 1})
    trial = sweep.ask()
    run_study_trial(sweep, trial.number, scripted([0.3] * len(STEPS), forgetting=0.5), base=BASE)
    frozen = sweep.frozen(trial.number)
    assert sweep.study.pruner.prune(sweep.study, frozen) is True  # what optuna-dashboard and should_prune see
    assert sweep.study.pruner.stop_reason(sweep.study, frozen).startswith("forgetting guard")


def test_a_diverged_trial_is_diverged_in_the_table_and_pruned_for_the_sampler(open_sweep):
    sweep = open_sweep(sampler="random", pruner=pruner("none"), forgetting_guard=None)
    number = sweep.ask().number
    assert run_study_trial(sweep, number, scripted([0.1] * len(STEPS), diverge_after=100), base=BASE) is Status.DIVERGED
    frozen = sweep.frozen(number)
    assert frozen.state is TrialState.PRUNED
    assert frozen.user_attrs[Attr.REASON.value] == "loss is nan at step 100"


@pytest.mark.parametrize("penalty, expected", [(10.0, Status.COMPLETED), (0.0, Status.PRUNED)])
def test_the_pruner_prefers_a_feasible_trial_to_higher_gain_over_budget(open_sweep, penalty, expected):
    # Six trials gain 0.3-0.35 but forget 0.05 (over the 0.02 budget); the seventh gains only
    # 0.2 within budget. It is the only candidate for the optimum: it must survive the pruner,
    # unless the pruner is told to judge raw domain_gain.
    sweep = open_sweep(
        sampler="random",
        pruner={**pruner("median"), "infeasible_penalty": penalty},
        forgetting_guard=None,
    )
    for i in range(6):
        gains = [0.3 + 0.01 * i] * len(STEPS)
        assert (
            run_study_trial(sweep, sweep.ask().number, scripted(gains, forgetting=0.05), base=BASE) is Status.COMPLETED
        )
    assert (
        run_study_trial(sweep, sweep.ask().number, scripted([0.2] * len(STEPS), forgetting=0.01), base=BASE) is expected
    )


def peaking(final: float):
    """Forgetting that rises to its peak at step 100 and falls to `final` (0.8 x the peak) by step 200,
    as every trial's general loss does on the default spec while the LR decays."""
    peak = final / 0.8
    return lambda step: peak * step / 100 if step <= 100 else peak * (1 - 0.2 * (step - 100) / 100)


def rising(final: float) -> list[float]:
    """domain_gain rising steadily to `final`: a trial's best value so far is its latest."""
    return [final * (k + 1) / len(STEPS) for k in range(len(STEPS))]


def run_calibration_trials(sweep, finals=(0.008, 0.010, 0.012, 0.014)):
    """Completed trials gaining up to 0.3, whose forgetting peaks mid-course and ends at `finals`."""
    for final in finals:
        trial = scripted(rising(0.3), forgetting=peaking(final))
        assert run_study_trial(sweep, sweep.ask().number, trial, base=BASE) is Status.COMPLETED


@pytest.mark.parametrize(
    ("peak", "expected", "predicted"),
    [(0.0216, Status.COMPLETED, 0.01728), (0.03, Status.PRUNED, 0.024)],
)
def test_the_penalty_judges_the_forgetting_a_trial_is_predicted_to_end_at(open_sweep, peak, expected, predicted):
    # Over the 0.02 budget at step 100 both; the completed trials' curves say the first ends within it.
    # Judged on the raw 0.0216 its value there (0.155 - 10 x 0.0016) would fall below the others' 0.15.
    sweep = open_sweep(
        sampler="random",
        pruner={"type": "median", "n_startup_trials": 2, "n_warmup_steps": 100},
        forgetting_guard=None,
    )
    run_calibration_trials(sweep)
    number = sweep.ask().number
    assert run_study_trial(sweep, number, scripted(rising(0.31), forgetting=peaking(0.8 * peak)), base=BASE) is expected
    frozen = sweep.frozen(number)
    forecast = frozen.user_attrs[Attr.FORECAST.value]  # recorded with the evaluation it judged
    assert forecast["predicted"] == pytest.approx(predicted) and forecast["trials"] == 4
    if expected is Status.PRUNED:
        assert frozen.user_attrs[Attr.STEPS.value] == 100
        assert (
            f"forgetting {peak:.4f} now, predicted {predicted:.4f} at the end" in frozen.user_attrs[Attr.REASON.value]
        )


@pytest.mark.parametrize(("peak", "expected"), [(0.0216, Status.COMPLETED), (0.03, Status.PRUNED)])
def test_the_forgetting_guard_judges_the_predicted_end_too(open_sweep, peak, expected):
    sweep = open_sweep(sampler="random", pruner=pruner("none"), forgetting_guard={"margin": 0.0, "min_steps": 100})
    run_calibration_trials(sweep)
    number = sweep.ask().number
    assert (
        run_study_trial(sweep, number, scripted([0.3] * len(STEPS), forgetting=peaking(0.8 * peak)), base=BASE)
        is expected
    )
    if expected is Status.PRUNED:
        reason = sweep.frozen(number).user_attrs[Attr.REASON.value]
        assert reason.startswith(
            f"forgetting guard at step 100: forgetting {peak:.4f} now, predicted 0.0240 at the end"
        )


def test_before_three_completed_trials_the_raw_forgetting_is_judged_and_said_so(open_sweep):
    sweep = open_sweep(sampler="random", pruner=pruner("none"), forgetting_guard={"margin": 0.0, "min_steps": 100})
    run_calibration_trials(sweep, finals=(0.008, 0.010))
    number = sweep.ask().number
    # Predicted within the budget by the two curves, but two trials are no calibration.
    assert (
        run_study_trial(sweep, number, scripted([0.3] * len(STEPS), forgetting=peaking(0.8 * 0.0216)), base=BASE)
        is Status.PRUNED
    )
    frozen = sweep.frozen(number)
    assert frozen.user_attrs[Attr.REASON.value].startswith(
        "forgetting guard at step 100: forgetting 0.0216 now, not predicted "
        "(2 completed trials evaluated at step 100, 3 needed)"
    )
    assert frozen.user_attrs[Attr.FORECAST.value]["predicted"] == pytest.approx(0.0216)


def test_completed_curves_with_no_rising_trend_leave_the_raw_value(open_sweep):
    sweep = open_sweep(sampler="random", pruner=pruner("none"), forgetting_guard={"margin": 0.0, "min_steps": 100})
    # The more a trial forgot at step 100, the less it ended at: no line to extrapolate a trial along.
    for mid, final in ((0.010, 0.014), (0.015, 0.010), (0.020, 0.006)):
        trial = scripted([0.3] * len(STEPS), forgetting=lambda step, mid=mid, final=final: mid if step < 200 else final)
        run_study_trial(sweep, sweep.ask().number, trial, base=BASE)
    number = sweep.ask().number
    assert run_study_trial(sweep, number, scripted([0.3] * len(STEPS), forgetting=0.03), base=BASE) is Status.PRUNED
    assert (
        "not predicted (no rising trend over the 3 completed trials)"
        in sweep.frozen(number).user_attrs[Attr.REASON.value]
    )
