"""Coverage of the law's answer on ladders drawn from known laws (issues 39 and 50, docs/ladder.md "Coverage,
measured"): for each truth of tests/sweep/law/law_truths.py (two of the fitter's forms and five families none of
them is written as, each drawn at four rungs over 1.5 decades with noise at the replicate spread, the target two
decades beyond), DRAWS draws fitted as `sweep law fit` fits them, and per truth: the share of draws answered (the
truth's optimum lies inside the box, so each should be), the refusals and their kinds, the share of answered draws
whose 90 % position intervals hold the truth's optimum, the share whose promoted point keeps the truth's
forgetting within the budget, and the intervals' median widths (a coverage says little of an interval as wide as the
box); then the truth outside the box, whose every draw must be refused.

    nice -n 10 .venv/bin/python benchmarks/law_coverage.py --draws 30 --refits 100

prints one line a draw as it goes and the table BENCHMARKS.md records.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the truths live with the tests that share them

from tests.sweep.law.law_truths import OUTSIDE, TRUTHS, Judged, judge

from sweep.law.config import LawSettings


HEADER = (
    "| truth | draws | answered (truth inside the box) | refused (kind) | 90 % intervals hold the optimum | "
    "true forgetting within budget | median width: lr_fraction high/low, share high-low |\n|---|---|---|---|---|---|---|"
)


def summary_line(name: str, judged: list[Judged]) -> str:
    answered = [j for j in judged if j.refused is None]
    refused = [j.refused for j in judged if j.refused is not None]
    kinds = ", ".join(f"{kind} {refused.count(kind)}" for kind in sorted(set(refused))) or "none"
    inside = [j for j in judged if j.inside]
    rate = "-" if not inside else f"{sum(j.refused is None for j in inside)}/{len(inside)}"
    if inside:
        rate += f" ({sum(j.refused is None for j in inside) / len(inside):.0%})"
    if not answered:
        return f"| {name} | {len(judged)} | {rate} | {len(refused)} ({kinds}) | - | - | - |"
    covered = sum(bool(j.covered) for j in answered)
    within = sum(bool(j.within_budget) for j in answered)
    lr_width = statistics.median(j.widths[0] for j in answered if j.widths)
    share_width = statistics.median(j.widths[1] for j in answered if j.widths)
    return (
        f"| {name} | {len(judged)} | {rate} | {len(refused)} ({kinds}) | {covered}/{len(answered)} "
        f"({covered / len(answered):.0%}) | {within}/{len(answered)} ({within / len(answered):.0%}) | "
        f"x{lr_width:.3g}, {share_width:.2f} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, default=30, help="draws per truth (default 30)")
    parser.add_argument("--refits", type=int, default=200, help="bootstrap refits per draw (default 200)")
    parser.add_argument("--outside-draws", type=int, default=5, help="draws of the truth outside the box (default 5)")
    parser.add_argument(
        "--first-draw", type=int, default=0, help="seed of the first draw (default 0): more draws later"
    )
    parser.add_argument("--truths", default=None, help="comma-separated truths to run (default: every one)")
    args = parser.parse_args()
    settings = LawSettings(refits=args.refits)
    chosen = args.truths.split(",") if args.truths else [*TRUTHS, "outside the box"]
    rows = []
    for name in chosen:
        truth = OUTSIDE if name == "outside the box" else TRUTHS[name]
        judged = []
        for seed in range(args.first_draw, args.first_draw + (args.outside_draws if truth is OUTSIDE else args.draws)):
            start = time.perf_counter()
            judged.append(judge(name, truth, seed, settings))
            verdict = judged[-1]
            said = verdict.refused or f"covered {verdict.covered}, within budget {verdict.within_budget}"
            print(f"{name} draw {seed}: {said}; {verdict.message} ({time.perf_counter() - start:.0f} s)", flush=True)
        rows.append(summary_line(name, judged))
    print(HEADER)
    print("\n".join(rows))


if __name__ == "__main__":
    main()
