"""Decision quality: how close the default sweep's pick comes to the best point an exhaustive grid finds.

The ground truth is a grid over the default space (5 lr_fractions x its listed mixes), every trial
run to its end, no replicates. Against it, each variant is a whole `sweep run` of the spec with one
change: the default spec at several sampler seeds, random search with the same trial budget, and
the default without pruning (pruner and forgetting guard off). For each variant's pick (best.json)
the benchmark re-measures the point by running one proxy trial there at the proxy's seed (the seed
the grid was measured with), then reports:

- regret: the grid's best feasible domain_gain less the re-measured domain_gain of the pick;
- within budget: whether the re-measured forgetting is within the forgetting budget;
- tokens: what the sweep read (pruned trials and replicates included) over what the grid read.

The grid's own best feasible point is re-measured first: a re-run must reproduce the grid's figure
(the proxy is deterministic on a CPU), or the ground truth is stale and the grid is run again.
Everything lives in --workdir and resumes: a finished sweep is read back, not run again.

    .venv/bin/python benchmarks/decision_quality.py [--spec search_spaces/lr_mix.yaml] [--seeds 0 1 2]
        [--workdir runs-decision-quality] [--grid RUN_DIR]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml
from rich.console import Console
from rich.table import Table

from sweep.choice.best import read_best
from sweep.choice.feasible import Score, is_feasible, ranked_feasible
from sweep.files.rundir import RUNS, RunDir
from sweep.run.prepare import Prepared, prepare
from sweep.spec.spec import load_spec
from sweep.study.record import Status
from sweep.study.study import load_study
from sweep.study.table import trial_rows
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial

GRID_LR_FRACTIONS = (0.05, 0.08, 0.12, 0.2, 0.3)
"""About evenly spaced in log over the default range 0.05-0.30, at round values."""
REPRODUCE_TOLERANCE = 1e-4
"""A re-run of a grid point must match the grid's domain_gain this closely for the grid to stand."""


@dataclass(frozen=True)
class Point:
    lr_fraction: float
    mix: str

    @property
    def key(self) -> str:
        return f"{self.lr_fraction:.6g}@{self.mix}"


@dataclass(frozen=True)
class Measured:
    domain_gain: float
    forgetting: float


@dataclass(frozen=True)
class Outcome:
    variant: str
    point: Point
    source: str
    predicted_gain: float | None
    remeasured: Measured
    regret: float
    within_budget: bool
    tokens_fraction: float
    wall_seconds: float


class Bench:
    """The benchmark's working directory: one spec file and run directory per variant, and the re-measures."""

    def __init__(self, spec_path: Path, workdir: Path) -> None:
        self.workdir = workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Corpus paths come out absolute, so the variants' specs load from the work directory.
        self.raw = load_spec(spec_path).model_dump(mode="json", exclude_none=True)
        self.raw["tracking"] = {"wandb": {"mode": "disabled"}}
        self.budget = self.raw["objective"]["forgetting_budget"]
        self.remeasured_file = self.workdir / "remeasured.json"
        self.remeasured: dict[str, dict] = (
            json.loads(self.remeasured_file.read_text()) if self.remeasured_file.is_file() else {}
        )
        self._prepared: Prepared | None = None

    def spec(self, name: str, *, space: dict | None = None, **search: Any) -> Path:
        raw = json.loads(json.dumps(self.raw))
        raw["space"].update(space or {})
        raw["search"].update(search)
        if raw["search"].get("sampler") == "grid":
            raw["search"].pop("num_trials", None)
        path = self.workdir / f"{name}.yaml"
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
        return path

    def sweep(self, name: str, spec: Path) -> tuple[RunDir, float]:
        """Runs (or resumes, or reads back) `sweep run spec --name name`; returns the run and its wall time."""
        run = RunDir(self.workdir / RUNS / name)
        times = self.workdir / "wall_seconds.json"
        walls = json.loads(times.read_text()) if times.is_file() else {}
        if name not in walls:
            started = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "cli", "run", str(spec), "--name", name],
                cwd=self.workdir,
                check=True,
                stdout=subprocess.DEVNULL,
            )
            walls[name] = time.perf_counter() - started
            times.write_text(json.dumps(walls, indent=2))
        return run, walls[name]

    def remeasure(self, point: Point) -> Measured:
        """One proxy trial at the point with the proxy's seed, on two threads; kept in remeasured.json."""
        if point.key not in self.remeasured:
            if self._prepared is None:
                self._prepared = prepare(load_spec(self.spec("remeasure")))
            config = self._prepared.trial_config(
                lr_fraction=point.lr_fraction,
                mix=MixRatio.parse(point.mix),
                output_dir=self.workdir / "remeasure" / point.key.replace(":", "-"),
            ).model_copy(update={"threads": 2})
            result = run_trial(config, lambda metrics: False)
            final = result.history[-1]
            self.remeasured[point.key] = {"domain_gain": final.domain_gain, "forgetting": final.forgetting}
            self.remeasured_file.write_text(json.dumps(self.remeasured, indent=2))
        return Measured(**self.remeasured[point.key])


def grid_truth(run: RunDir) -> tuple[dict[Point, Measured], int]:
    """Every completed grid point's final metrics, and the tokens the grid read."""
    record = run.read_record()
    rows = trial_rows(load_study(url=record.url(run), name=record.study_name))
    truth = {
        Point(row.lr_fraction, row.mix): Measured(row.domain_gain, row.forgetting)
        for row in rows
        if row.status is Status.COMPLETED
    }
    return truth, sum(row.tokens_seen or 0 for row in rows)


def best_feasible(truth: dict[Point, Measured], budget: float) -> tuple[Point, Measured]:
    """The grid's best feasible point under the sweep's own rule (sweep/choice/feasible.py), ties to the earlier point."""
    items = list(truth.items())
    ranked = ranked_feasible(
        range(len(items)), budget, lambda k: Score(items[k][1].domain_gain, items[k][1].forgetting, k)
    )
    if not ranked:
        raise SystemExit(f"no grid point is within the forgetting budget {budget}: the ground truth has no optimum")
    return items[ranked[0]]


def ground_truth(bench: Bench, grid: Path | None, console: Console) -> tuple[dict[Point, Measured], int, float]:
    """The grid (given, or run here), checked by re-measuring its best feasible point."""
    if grid is None:
        spec = bench.spec(
            "grid", space={"lr_fraction": list(GRID_LR_FRACTIONS)}, sampler="grid", pruner={"type": "none"},
            forgetting_guard=None, replicates={"top": 0},
        )  # fmt: skip
        run, _ = bench.sweep("grid", spec)
    else:
        run = RunDir(grid)
    truth, tokens = grid_truth(run)
    expected = len(GRID_LR_FRACTIONS) * len(bench.raw["space"]["mix"])
    if len(truth) < expected:
        raise SystemExit(f"the grid {run.path} has {len(truth)} completed points of {expected}")
    point, measured = best_feasible(truth, bench.budget)
    again = bench.remeasure(point)
    if abs(again.domain_gain - measured.domain_gain) <= REPRODUCE_TOLERANCE:
        console.print(f"grid {run.path}: best feasible {point.key} gain {measured.domain_gain:.4f}, reproduced")
        return truth, tokens, measured.domain_gain
    if grid is None:
        raise SystemExit(
            f"the grid run here does not reproduce its best point {point.key}: the proxy is not deterministic"
        )
    console.print(
        f"grid {run.path}: {point.key} re-measured at gain {again.domain_gain:.4f}, the grid says "
        f"{measured.domain_gain:.4f}: stale, running the grid here"
    )
    return ground_truth(bench, None, console)


def variants(seeds: list[int]) -> dict[str, dict[str, Any]]:
    """Each variant's change to the spec's search section."""
    found = {f"default-seed{seed}": {"seed": seed} for seed in seeds}
    found["random"] = {"sampler": "random", "seed": seeds[0]}
    found["unpruned"] = {"pruner": {"type": "none"}, "forgetting_guard": None, "seed": seeds[0]}
    return found


def evaluate(bench: Bench, name: str, change: dict, best_gain: float, grid_tokens: int) -> Outcome:
    run, wall = bench.sweep(name, bench.spec(name, **change))
    summary = read_best(run)
    pick = summary.pick
    if pick is None or pick.point is None:
        raise SystemExit(f"{name}: the sweep picked nothing ({summary.verdict})")
    point = Point(pick.point.lr_fraction, pick.point.mix)
    measured = bench.remeasure(point)
    return Outcome(
        variant=name,
        point=point,
        source=pick.source.value,
        predicted_gain=pick.gain.mean if pick.gain else None,
        remeasured=measured,
        regret=best_gain - measured.domain_gain,
        within_budget=is_feasible(measured.forgetting, bench.budget),
        tokens_fraction=summary.cost.tokens_used / grid_tokens,
        wall_seconds=wall,
    )


def outcome_table(outcomes: list[Outcome], best_gain: float, budget: float) -> Table:
    table = Table(title=f"Decision quality (grid best feasible gain {best_gain:.4f}, budget {budget})")
    for column in ("variant", "pick", "source", "predicted gain", "re-measured gain", "forgetting", "regret",
                   "in budget", "tokens / grid", "wall s"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("variant", "pick", "source") else "right")
    for o in outcomes:
        table.add_row(
            o.variant, f"{o.point.lr_fraction:.4g} @ {o.point.mix}", o.source,
            "" if o.predicted_gain is None else f"{o.predicted_gain:.4f}", f"{o.remeasured.domain_gain:.4f}",
            f"{o.remeasured.forgetting:.4f}", f"{o.regret:+.4f}", "yes" if o.within_budget else "NO",
            f"{o.tokens_fraction:.0%}", f"{o.wall_seconds:.0f}",
        )  # fmt: skip
    return table


def grid_table(truth: dict[Point, Measured], budget: float) -> Table:
    """The ground truth: domain_gain / forgetting at every grid point, over budget marked."""
    mixes = list(dict.fromkeys(point.mix for point in truth))
    table = Table(title="Ground truth: domain_gain / forgetting ('*' over the budget)")
    table.add_column("lr_fraction", justify="right")
    for mix in mixes:
        table.add_column(mix, justify="right")
    for lr in sorted({point.lr_fraction for point in truth}):
        cells = []
        for mix in mixes:
            m = truth.get(Point(lr, mix))
            cells.append(
                "" if m is None else f"{m.domain_gain:.4f} / {m.forgetting:.4f}{'*' * (m.forgetting > budget)}"
            )
        table.add_row(f"{lr:g}", *cells)
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, default=Path("search_spaces/lr_mix.yaml"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="sampler seeds of the default sweep")
    parser.add_argument("--workdir", type=Path, default=Path("runs-decision-quality"))
    parser.add_argument("--grid", type=Path, help="a finished grid run to take as the ground truth (checked)")
    args = parser.parse_args()

    console = Console(width=160)  # the tables are read from a log as often as from a terminal
    bench = Bench(args.spec, args.workdir)
    truth, grid_tokens, best_gain = ground_truth(bench, args.grid, console)
    console.print(grid_table(truth, bench.budget))
    outcomes = []
    for name, change in variants(args.seeds).items():
        outcomes.append(evaluate(bench, name, change, best_gain, grid_tokens))
        console.print(f"{name}: regret {outcomes[-1].regret:+.4f}")
    console.print(outcome_table(outcomes, best_gain, bench.budget))
    default = [o for o in outcomes if o.variant.startswith("default")]
    console.print(
        f"default over {len(default)} seeds: worst regret {max(o.regret for o in default):+.4f}, within budget "
        f"{sum(o.within_budget for o in default)}/{len(default)}, tokens "
        f"{max(o.tokens_fraction for o in default):.0%} of the grid at most"
    )
    results = {"budget": bench.budget, "grid_best_gain": best_gain, "outcomes": [asdict(o) for o in outcomes]}
    (bench.workdir / "decision_quality.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
