"""Coverage of the law's answer on ladders drawn from known laws (issue 39, docs/ladder.md "Validation"): for each
truth of tests/sweep/law/law_truths.py (two of the fitter's forms and one none of them contains, each drawn at
four rungs over 1.5 decades with noise at the replicate spread, the target two decades beyond), DRAWS draws fitted
as `sweep law fit` fits them, and per truth: the draws refused and why, the share of answered draws whose 90 %
position intervals hold the truth's optimum, and the share whose promoted point keeps the truth's forgetting
within the budget; then the truth outside the box, whose every draw must be refused.

    .venv/bin/python benchmarks/law_coverage.py --draws 30 --refits 200

prints one line a draw as it goes and the table BENCHMARKS.md records.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the truths live with the tests that share them

from tests.sweep.law.law_truths import OUTSIDE, TRUTHS, Judged, judge

from sweep.law.config import LawSettings


def summary_line(name: str, judged: list[Judged]) -> str:
    answered = [j for j in judged if j.refused is None]
    refused = [j.refused for j in judged if j.refused is not None]
    kinds = ", ".join(f"{kind} {refused.count(kind)}" for kind in sorted(set(refused))) or "none"
    if not answered:
        return f"| {name} | {len(judged)} | {len(refused)} ({kinds}) | - | - |"
    covered = sum(bool(j.covered) for j in answered)
    within = sum(bool(j.within_budget) for j in answered)
    return (
        f"| {name} | {len(judged)} | {len(refused)} ({kinds}) | {covered}/{len(answered)} "
        f"({covered / len(answered):.0%}) | {within}/{len(answered)} ({within / len(answered):.0%}) |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--draws", type=int, default=30, help="draws per truth (default 30)")
    parser.add_argument("--refits", type=int, default=200, help="bootstrap refits per draw (default 200)")
    parser.add_argument("--outside-draws", type=int, default=5, help="draws of the truth outside the box (default 5)")
    args = parser.parse_args()
    settings = LawSettings(refits=args.refits)
    rows = []
    for name, truth in [*TRUTHS.items(), ("outside the box", OUTSIDE)]:
        judged = []
        for seed in range(args.outside_draws if truth is OUTSIDE else args.draws):
            start = time.perf_counter()
            judged.append(judge(name, truth, seed, settings))
            print(f"{name} draw {seed}: {judged[-1]} ({time.perf_counter() - start:.0f} s)", flush=True)
        rows.append(summary_line(name, judged))
    print("| truth | draws | refused (kind) | 90 % intervals hold the optimum | true forgetting within budget |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()
