"""benchmarks/decision_quality.py's calibration table on scripted (P, re-run within budget) pairs: a bin is judged
only with enough pairs, and one whose observed frequency is more than 0.1 from its mean P is a miss; its references
for regret on scripted measures."""

from __future__ import annotations

import sys
from pathlib import Path

from rich.console import Console

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCHMARKS))
from decision_quality import (
    FRESH_SEEDS,
    GRID_SEEDS,
    SWEEP_PROXY_STRIDE,
    Measured,
    Outcome,
    Point,
    best_certifiable,
    best_feasible,
    calibration_table,
    outcome_table,
    variants,
)


def test_calibration_bins_judge_the_observed_frequency_against_the_mean_probability():
    calibrated = [(0.95, True)] * 19 + [(0.95, False)]  # 0.95 said, 0.95 seen
    overconfident = [(0.92, True)] * 6 + [(0.92, False)] * 4  # 0.92 said, 0.6 seen
    few = [(0.15, False)] * 4
    _, bins = calibration_table(calibrated + overconfident + few)
    by_bin = {round(b["low"], 1): b for b in bins}
    assert by_bin[0.9]["pairs"] == 30 and by_bin[0.9]["verdict"] == "MISS"  # (19 + 6) / 30 = 0.83 vs 0.94
    assert by_bin[0.1]["verdict"] == "too few"
    _, alone = calibration_table(calibrated)
    assert alone[0]["verdict"] == "ok" and alone[0]["observed"] == 0.95


def test_the_default_variants_vary_the_proxy_seed_too_and_the_fresh_seeds_are_none_of_theirs():
    found = variants([0, 1, 2])
    proxy_seeds = [found[f"default-seed{s}"]["proxy"]["seed"] for s in (0, 1, 2)]
    assert proxy_seeds == [0, SWEEP_PROXY_STRIDE, 2 * SWEEP_PROXY_STRIDE]
    # A sweep trains at its proxy seed and a few after it (replicates, confirmation): never a fresh one.
    assert all(abs(fresh - seed) > 100 for fresh in FRESH_SEEDS for seed in proxy_seeds)
    assert set(GRID_SEEDS) <= set(FRESH_SEEDS)


def _measured(gain: float, forgetting: float, error: float) -> Measured:
    return Measured(gain, forgetting, 0.01, error, 0.0, 0.0)


def test_the_certifiable_best_keeps_the_margin_a_chance_constrained_rule_needs():
    """e-commerce's fresh grid (2026-11-28): its best feasible point forgets 0.0100 ± 0.0011 against a budget of
    0.01, which no rule held to P >= 0.9 may call within it; the certifiable best is the next point whose forgetting
    clears the budget by 1.28 of its text errors."""
    measured = {
        Point(0.2, "4:1"): _measured(0.2446, 0.0100, 0.0011),
        Point(0.1465, "4:1"): _measured(0.2261, 0.0070, 0.0009),
        Point(0.08, "2:1"): _measured(0.2212, 0.0076, 0.0008),
        Point(0.12, "2:1"): _measured(0.2481, 0.0103, 0.0010),
    }
    assert best_feasible(measured, 0.01)[0] == Point(0.2, "4:1")
    assert best_certifiable(measured, 0.01, 0.9)[0] == Point(0.1465, "4:1")  # 0.0070 + 1.28 x 0.0009 = 0.0082
    assert best_certifiable(measured, 0.01, 0.5)[0] == Point(0.2, "4:1")  # at P 0.5 the measure itself decides
    assert best_certifiable(measured, 0.005, 0.9) is None


def test_each_picks_predicted_figures_on_the_pool_stand_beside_its_fresh_ones():
    """The surrogate's forgetting at the pick (on the sweep's pool) beside the fresh re-runs' mean: where the pool is
    harder text than the population, the pick holds back from a budget the population would allow."""
    figures = {"source": "surrogate", "confirmation": "confirmed", "predicted_gain": 0.2245, "fresh_gain": 0.2261,
               "predicted_forgetting": 0.0087, "fresh_forgetting": 0.0070, "regret": 0.0185, "certified_regret": 0.0,
               "within_budget": 3, "tokens_fraction": 0.37, "wall_seconds": 200.0, "train_seconds": 150.0,
               "eval_seconds": 40.0}  # fmt: skip
    confirmed = Outcome(variant="default-seed0", point=Point(0.1465, "4:1"), **figures)
    unpredicted = figures | {"source": "observed", "predicted_gain": None, "predicted_forgetting": None}
    observed = Outcome(variant="default-seed1", point=Point(0.05, "8:1"), **unpredicted)
    console = Console(width=200, record=True)
    console.print(outcome_table([confirmed, observed], best_gain=0.2446, budget=0.01))
    rows = [line for line in console.export_text().splitlines() if "default-seed" in line]
    assert "0.2245 / 0.2261" in rows[0] and "0.0087 / 0.0070" in rows[0]
    assert "- / 0.2261" in rows[1] and "- / 0.0070" in rows[1]
