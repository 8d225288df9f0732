from scripted import trial_row

from sweep.choice.best import best_summary_with
from sweep.choice.observed import select
from sweep.space import SearchSpace
from sweep.study.record import Status
from sweep.study.row import TrialRow

SPACE = SearchSpace.model_validate({"lr_fraction": {"low": 0.05, "high": 0.2}, "mix": ["4:1", "1:1", "1:4"]})
BUDGET = 0.02


def row(number, gain, forgetting, *, status=Status.COMPLETED, lr=0.1, mix="1:1") -> TrialRow:
    return trial_row(number, lr, mix, gain, forgetting, status=status)


def test_the_best_observed_trial_is_the_feasible_completed_trial_with_the_highest_gain():
    rows = [row(0, 0.10, 0.01), row(1, 0.30, 0.05), row(2, 0.20, 0.02), row(3, 0.50, 0.0, status=Status.PRUNED)]
    selection = select(rows, forgetting_budget=BUDGET, space=SPACE)
    assert selection.best_observed.number == 2  # 1 is over budget, 3 did not run the full budget
    assert selection.least_forgetting is None
    assert selection.verdict.startswith("best observed trial: 2")


def test_none_feasible_says_so_and_names_the_least_forgetting_pareto_trial():
    rows = [row(0, 0.10, 0.08), row(1, 0.30, 0.05), row(2, 0.05, 0.09), row(3, 0.2, 0.0, status=Status.DIVERGED)]
    selection = select(rows, forgetting_budget=BUDGET, space=SPACE)
    assert selection.best_observed is None
    assert selection.least_forgetting.number == 1
    assert "no completed trial is within the forgetting budget" in selection.verdict
    assert "trial is 1" in selection.verdict


def test_nothing_completed_has_no_best_observed_trial_and_no_front():
    selection = select([row(0, 0.1, 0.0, status=Status.PRUNED)], forgetting_budget=BUDGET, space=SPACE)
    assert (selection.best_observed, selection.pareto, selection.least_forgetting) == (None, [], None)
    assert "no trial completed" in selection.verdict


def test_ties_on_gain_go_to_less_forgetting_then_to_the_earlier_trial():
    rows = [row(0, 0.2, 0.015), row(1, 0.2, 0.01), row(2, 0.2, 0.01)]
    assert select(rows, forgetting_budget=BUDGET, space=SPACE).best_observed.number == 1


def test_pareto_front_keeps_exactly_the_non_dominated_trials_by_rising_forgetting():
    rows = [
        row(0, 0.10, 0.00),
        row(1, 0.20, 0.01),
        row(2, 0.15, 0.02),  # dominated by 1
        row(3, 0.40, 0.06),
        row(4, 0.40, 0.07),  # dominated by 3
        row(5, 0.9, 0.0, status=Status.PRUNED),  # never on the front
    ]
    front = select(rows, forgetting_budget=BUDGET, space=SPACE).pareto
    assert [r.number for r in front] == [0, 1, 3]


def test_boundary_warning_when_the_best_observed_trial_sits_on_an_edge_of_the_range():
    edge = select([row(0, 0.2, 0.01, lr=0.2, mix="1:4")], forgetting_budget=BUDGET, space=SPACE)
    assert len(edge.boundary) == 2
    assert "lr_fraction=0.2 is at the high end" in edge.boundary[0]
    assert "domain_share=0.8 is at the high end" in edge.boundary[1]
    inside = select([row(0, 0.2, 0.01, lr=0.1, mix="1:1")], forgetting_budget=BUDGET, space=SPACE)
    assert inside.boundary == []


def test_a_tiny_budget_is_printed_with_the_digits_that_tell_it_from_zero():
    """A budget of 1e-6 printed as 0.0000, as if no forgetting at all were allowed."""
    feasible = select([row(0, 0.1, 0.0)], forgetting_budget=1e-6, space=SPACE)
    assert feasible.verdict.endswith("(budget 1e-06)")
    infeasible = select([row(0, 0.1, 0.01)], forgetting_budget=2.5e-5, space=SPACE)
    assert "within the forgetting budget 2.5e-05;" in infeasible.verdict


def test_the_runner_up_is_the_second_under_the_rule_never_the_optimum_itself(open_sweep):
    """best.json sorted by gain alone: with two trials tied on gain, its runner-up could be the optimum."""
    plan = open_sweep().plan
    rows = [row(0, 0.2, 0.005), row(1, 0.2, 0.001), row(2, 0.1, 0.0)]
    selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
    summary = best_summary_with(None, selection, rows, plan)
    assert (summary.best_observed.number, summary.evidence.runner_up.number) == (1, 0)
    assert summary.evidence.feasible_completed == 3


def test_the_best_observed_trial_and_the_front_are_search_trials_on_the_pool_never_a_confirmation_or_replicate():
    """Issue 49: on one run a confirmation trial, measured on a draw of its own (easier text), became the best
    observed trial, and the Pareto front joined trials measured on different text."""
    search = [row(0, 0.20, 0.010), row(1, 0.25, 0.030), row(2, 0.10, 0.000)]
    replicate = trial_row(3, 0.1, "1:1", 0.22, 0.009, seed=1, replicate_of=0)
    confirmation = trial_row(4, 0.12, "1:1", 0.30, 0.005, seed=2, confirms=0)  # on draw 1: gains most, forgets least

    selection = select([*search, replicate, confirmation], forgetting_budget=BUDGET, space=SPACE)

    assert confirmation.text == "draw 1" and selection.best_observed.number == 0
    assert [r.number for r in selection.pareto] == [2, 0, 1]  # the search's own front: no draw, no replicate
    assert select(search, forgetting_budget=BUDGET, space=SPACE).pareto == selection.pareto
