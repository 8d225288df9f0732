"""One picture of the decision: `sweep status`, the report's summary and both figures of the decision name the
pick (with its intervals and its confirmation) and the best observed trial, and say in one line why they differ;
on scripted trials and the sweep's own best.json functions."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import numpy as np
import pytest
from rich.console import Console

from reports import plots
from reports.decision import decision_lines, why_not_best_observed
from reports.snapshot import RunSnapshot, pick_surrogate
from reports.tables import print_outcome
from sweep.choice.best import best_summary
from sweep.choice.confirmation import Setting, confirmation_state
from sweep.choice.observed import select
from sweep.choice.surrogate import fit_surrogate
from sweep.study.study import SweepPlan
from tests.reports.default_run import default_run
from tests.sweep.scripted import smooth_rows, spec_with, trial_row

MIXES = ("4:1", "2:1", "1:1")
PLAN = spec_with(confirmation={"seeds": 2, "candidates": 2}).plan()
BUDGET = PLAN.forgetting_budget


def searched() -> list:
    return smooth_rows(0.3, MIXES, forgetting_slope=0.12, seed=0)


def confirm(rows: list, forgetting: tuple[float, float], *, gain: float = 0.15) -> list:
    """`rows` and the confirmation round now due, its two fresh seeds measuring `forgetting`."""
    state = confirmation_state(rows, Setting.of(PLAN))
    point = state.pick.point
    added = [
        trial_row(len(rows) + k, point.lr_fraction, point.mix, gain + 0.001 * k, value, seed=seed, confirms=state.due.round)
        for k, (seed, value) in enumerate(zip(state.due.seeds, forgetting))
    ]  # fmt: skip
    return [*rows, *added]


def summary_of(rows: list):
    return best_summary(select(rows, forgetting_budget=BUDGET, space=PLAN.space), rows, PLAN)


def snapshot_of(rows: list, plan: SweepPlan = PLAN) -> RunSnapshot:
    """What load_run makes of a study holding `rows`."""
    selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
    everything = fit_surrogate(rows, plan.space)
    summary = best_summary(selection, rows, plan)
    return RunSnapshot(
        name="scripted", run_dir=Path("runs/scripted"), taken_at=dt.datetime.now(dt.UTC), plan=plan, spec={},
        rows=rows, histories={}, bases={}, without_history=[], selection=selection,
        surrogate=pick_surrogate(summary, rows, plan.space, fitted=everything), summary=summary,
    )  # fmt: skip


def test_status_names_the_pick_with_its_confirmation_and_the_best_observed_trial_and_says_why_they_differ():
    rows = confirm(searched(), (0.0150, 0.0170))
    summary = summary_of(rows)
    pick, best = summary.pick, summary.best_observed
    assert not pick.point.trials and best is not None  # the scenario: a pick no trial tried, confirmed
    console = Console(record=True, width=250)

    print_outcome(console, select(rows, forgetting_budget=BUDGET, space=PLAN.space), rows, title="t", summary=summary)

    text = console.export_text()
    where = f"lr_fraction {pick.point.lr_fraction:.4g} (peak LR {pick.point.lr_fraction * PLAN.max_lr:.3g})"
    headline = (
        f"pick: {where}, mix {pick.point.mix}, of the surrogate, confirmed at 2 fresh seed(s) on fresh validation text "
        "(draw 1, trials 12, 13): "
        "domain_gain 0.1505 ± 0.0007, forgetting 0.0160 ± 0.0014, within the budget 0.02"
    )
    assert summary.verdict == headline and headline in text
    # The decision leads; the best observed trial follows it as evidence.
    assert text.index(headline) < text.index(f"evidence: best observed trial: {best.number}, lr_fraction")
    assert f"confirmation at fresh seeds: candidate 1 ({pick.point.lr_fraction:.4g} @ {pick.point.mix}) held" in text
    held = summary.confirmation.confirmed
    gain, forgetting = held.gain_interval, held.forgetting_interval
    assert (
        f"candidate 1 ({pick.point.lr_fraction:.4g} @ {pick.point.mix}), trials 12, 13: at fresh seeds on draw 1 "
        f"domain_gain 0.1505 ± 0.0007, forgetting 0.0160 ± 0.0014 (predicted {pick.gain.mean:.4f} [{gain[0]:.4f}, "
        f"{gain[1]:.4f}], {pick.forgetting.mean:.4f} [{forgetting[0]:.4f}, {forgetting[1]:.4f}]), within the budget 0.02"
    ) in text
    assert "12 ◆" in text and "13 ◆" in text and f"{best.number} *" in text
    (versus,) = [c for c in pick.comparisons if c.point.trials[0] == best.number]
    assert (
        f"the pick is a point no search trial tried: the surrogate predicts {versus.gain_difference:+.4f} "
        f"[{versus.low:+.4f}, {versus.high:+.4f}] domain_gain over the best observed trial ({best.number})'s point, "
        f"within budget (P={pick.probability_within_budget:.2f})"
    ) in text


def test_the_line_says_when_confirmation_moved_the_pick_and_which_forgetting_moved_it():
    first = confirm(searched(), (0.0300, 0.0320))
    refused = summary_of(first).confirmation.rounds[0]
    rows = confirm(first, (0.0100, 0.0120))
    summary = summary_of(rows)

    assert summary.confirmation.outcome.value == "confirmed" and len(summary.confirmation.rounds) == 2
    line = why_not_best_observed(summary)
    assert line.startswith(
        f"confirmation moved the pick to candidate 2: candidate 1's ({refused.lr_fraction:.4g} @ {refused.mix}) "
        f"forgetting at fresh seeds 0.0310 > budget 0.02; the pick is "
    )
    lines = decision_lines(summary)
    assert any("candidate 1 (" in x and "over the budget 0.02" in x for x in lines)
    assert any("candidate 2 (" in x and "within the budget 0.02" in x for x in lines)
    assert lines[-1] == f"  {line}"


def test_a_confirmation_trial_that_gains_the_most_on_its_own_draw_is_never_the_best_observed_trial():
    """Issue 49: a confirmation trial, measured on a draw of its own, became the best observed trial (trial 8 on the
    default run), and the report called the pick "the best observed trial's point". The best observed trial, its
    runner-up and the Pareto front are search trials on the pool."""
    rows = confirm(searched(), (0.0150, 0.0170), gain=0.5)
    summary = summary_of(rows)
    confirmation = {row.number for row in rows if row.confirms is not None}

    assert summary.best_observed.number not in confirmation and summary.best_observed.text == "pool"
    assert (
        summary.best_observed.number
        == max((row for row in searched() if row.forgetting <= BUDGET), key=lambda row: row.domain_gain).number
    )
    assert not confirmation & {row.number for row in summary.pareto_front}
    assert summary.evidence.runner_up.number not in confirmation
    assert "the pick is the best observed trial's point" not in why_not_best_observed(summary)


def test_a_pick_at_the_best_observed_trials_point_its_fresh_seeds_refused_says_both():
    # Three points: no surrogate, so the pick is the best observed trial's point; its fresh seeds end over the
    # budget, and nothing else is left to confirm.
    rows = confirm(searched()[:3], (0.0150, 0.0300))
    summary = summary_of(rows)
    refused = summary.confirmation.rounds[0]

    assert summary.best_observed.number < 3 and summary.confirmation.outcome.value == "not_found"
    assert why_not_best_observed(summary) == (
        f"no candidate held at fresh seeds: candidate 1's ({refused.lr_fraction:.4g} @ {refused.mix}) forgetting at "
        f"fresh seeds 0.0225 > budget 0.02; the pick is the best observed trial's point (trial "
        f"{summary.best_observed.number})"
    )


def test_a_pick_at_the_best_observed_trials_point_says_so_and_an_unconfirmed_one_says_why():
    rows = searched()[:3]  # 3 distinct points: no surrogate, the pick is the best observed trial's
    summary = summary_of(rows)

    assert (
        why_not_best_observed(summary)
        == f"the pick is the best observed trial's point (trial {summary.best_observed.number})"
    )
    assert "  confirmation at fresh seeds: pending (round 0: 0 of 2 confirmation trials ran)" in decision_lines(summary)
    assert summary.verdict.startswith("pick awaiting confirmation at fresh seeds: lr_fraction")


def test_the_pareto_figure_marks_the_pick_with_its_intervals_and_confirmation_beside_the_best_observed_trial():
    rows = confirm(searched(), (0.0150, 0.0170))
    snapshot = snapshot_of(rows)
    pick, best = snapshot.summary.pick, snapshot.summary.best_observed

    figure = plots.front_figure([snapshot])

    ax = figure.axes[0]
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert any(label.startswith(f"best observed trial ({best.number}), one seed: ") for label in legend)
    assert [text.get_text() for text in ax.texts] == [
        f"pick: lr_fraction {pick.point.lr_fraction:.3g}, mix {pick.point.mix}"
    ]
    assert (
        f"pick (surrogate), predicted, 90 % intervals: lr_fraction {pick.point.lr_fraction:.3g}, mix {pick.point.mix}, "
        f"P(within budget) {pick.probability_within_budget:.2f}"
    ) in legend
    assert (
        "candidate 1 at 2 fresh seed(s), mean ± sd: gain 0.1505 ± 0.0007, forgetting 0.0160 ± 0.0014, within the budget"
    ) in legend
    assert "the pick is a point no search trial tried: the surrogate predicts" in ax.get_title().replace("\n", " ")
    plots.close(figure)


def test_the_surrogate_figure_marks_the_best_observed_trial_beside_the_pick_and_its_confirmation():
    rows = confirm(searched(), (0.0150, 0.0170))
    snapshot = snapshot_of(rows)
    best = snapshot.summary.best_observed

    figure = plots.surrogate_figure(snapshot)

    ax = figure.axes[0]
    legend = [text.get_text() for text in ax.get_legend().get_texts()]
    assert f"best observed trial ({best.number}), measured" in legend
    (pick,) = [label for label in legend if label.startswith("pick (surrogate), predicted: gain ")]
    assert pick.endswith(
        "\ncandidate 1 at 2 fresh seed(s), mean ± sd: gain 0.1505 ± 0.0007, forgetting 0.0160 ± 0.0014, within the budget"
    )
    assert "the pick is a point no search trial tried" in ax.get_title().replace("\n", " ")
    plots.close(figure)


@pytest.mark.parametrize("outcome", ["off", "not_found"])
def test_an_unconfirmed_pick_is_said_to_be_one(outcome):
    rows = searched()
    if outcome == "not_found":
        rows = confirm(confirm(rows, (0.03, 0.032)), (0.04, 0.042))
        summary = summary_of(rows)
        assert why_not_best_observed(summary).startswith("no candidate held at fresh seeds: candidate 1's (")
        assert (
            "  confirmation at fresh seeds: no candidate held (candidates 1, 2 ended over the budget; promote only "
            "with --unconfirmed)"
        ) in decision_lines(summary)
        assert summary.verdict.startswith("no confirmed pick: none of the 2 candidate(s) confirmed at fresh seeds held")
    else:
        plan = spec_with(confirmation={"seeds": 0}).plan()
        summary = best_summary(select(rows, forgetting_budget=BUDGET, space=plan.space), rows, plan)
        assert "  confirmation at fresh seeds: off (search.confirmation.seeds is 0), the pick was not re-run" in (
            decision_lines(summary)
        )
        assert summary.verdict.startswith("pick, not confirmed (search.confirmation.seeds is 0): lr_fraction")


def test_the_surrogate_plot_draws_the_function_the_pick_was_chosen_on_and_its_p_agrees_with_the_text():
    # Confirmation moved the pick: it was chosen on the pool's trials, not on the confirmation trials' draws.
    rows = confirm(confirm(searched(), (0.0300, 0.0320)), (0.0100, 0.0120))
    snapshot = snapshot_of(rows)
    pick = snapshot.summary.pick
    assert snapshot.summary.confirmation.outcome.value == "confirmed"
    assert pick.fit.trials == sorted(r.number for r in rows if r.confirms is None)

    _, forgetting = snapshot.surrogate.predict([pick.point.lr_fraction], [pick.point.domain_share])
    plotted = float(forgetting.probability_at_most(BUDGET)[0])

    assert plotted == pytest.approx(pick.probability_within_budget, abs=1e-9)
    surface = plots.surrogate_surface(snapshot)  # the grid the figure contours, with a node at the pick
    at = np.isclose(surface.lr_fraction, pick.point.lr_fraction) & np.isclose(
        surface.ratio, (1 - pick.point.domain_share) / pick.point.domain_share
    )
    assert at.sum() == 1 and surface.probability[at][0] == pytest.approx(pick.probability_within_budget, abs=1e-9)
    # Outside the hatched region exactly when the text's P meets the rule.
    assert (plotted >= PLAN.pick.min_probability) == (pick.probability_within_budget >= PLAN.pick.min_probability)


def test_mixes_no_trial_ran_are_marked_on_the_plot_and_named_in_the_warnings():
    rows, plan = default_run()
    snapshot = snapshot_of(rows, plan)

    surface = plots.surrogate_surface(snapshot)

    def row_at(ratio: float) -> np.ndarray:
        return surface.untried[np.argmin(np.abs(np.log(surface.ratio[:, 0] / ratio)))]

    assert row_at(1.0).all() and row_at(0.5).all()  # mixes 1:1 and 1:2: no trial ran to the end there
    assert not row_at(4.0).all()  # 4:1, where the pick is
    assert (
        "no trial ran to the end at mix 1:1, 1:2: the surrogate's figures there are its extrapolation (hatched grey on "
        "the surrogate plot)"
    ) in snapshot.summary.boundary_warnings


def test_a_pruned_outlier_does_not_set_the_trade_off_plots_axes_and_the_pick_is_the_labelled_point():
    rows, plan = default_run()
    snapshot = snapshot_of(rows, plan)
    outlier = max(rows, key=lambda row: row.forgetting)
    assert outlier.status.value == "PRUNED" and outlier.forgetting > 5 * plan.forgetting_budget

    figure = plots.front_figure([snapshot])

    ax = figure.axes[0]
    assert ax.get_xlim()[1] < 2 * plan.forgetting_budget
    labels = [text.get_text() for text in ax.texts]
    pick = snapshot.summary.pick.point
    assert labels[0] == f"pick: lr_fraction {pick.lr_fraction:.3g}, mix {pick.mix}"
    assert f"#{outlier.number} (pruned) at {outlier.forgetting:.3f}, {outlier.domain_gain:.3f} →" in labels
    plots.close(figure)
