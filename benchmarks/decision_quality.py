"""Decision quality: how close the default sweep's pick comes to the best point an exhaustive grid finds, measured
on proxy runs the sweep never saw, and how well the surrogate's P(within budget) is calibrated.

The ground truth is a grid over the default space (5 lr_fractions x its listed mixes), every trial run to its
end, no replicates, no confirmation: once as a `sweep run` at the spec's proxy seed, measured on validation draw 0
as every sweep's search is (re-measuring its best point checks that the proxy is deterministic, else the grid is
stale), then again at each of FRESH_SEEDS, proxy seeds that neither that grid nor any sweep here trains with, each
measured on a validation draw no sweep here was measured on (fresh_draws: draws D, D + 1, ... past the D =
validation_draws(spec) that a sweep uses; where the validation text holds fewer stable draws than fresh seeds, the
ones it holds are cycled, and the benchmark says so). Against it, each variant is a whole `sweep run` of the spec
with one change: the default spec at several seeds, each varying the sampler's seed *and* the sweep's proxy seed
(SWEEP_PROXY_SEEDS: another noise realisation of every trial, not only other points), random search with the same
trial budget, and the default without pruning. Before any fresh measure the benchmark checks that its draws
0 .. D - 1 hold the very text each sweep's trials were measured on (their trial_config.json), and refuses to go on
otherwise. Each variant's pick (best.json's: the confirmed one, or the last tried) is re-measured at every fresh
seed on that seed's draw (from the fresh grids when it is a grid point, else by one proxy trial per seed), and the
benchmark reports:

- regret: the fresh-seed mean domain_gain of the grid's best feasible point (feasible on its fresh-seed mean
  forgetting) less the fresh-seed mean domain_gain of the pick;
- within budget: on how many of the pick's fresh-seed re-runs forgetting stays within the budget;
- tokens: what the sweep read (pruned trials, replicates and confirmation trials included) over what one grid read;
- calibration: for every default variant's surrogate (fitted to all its trials), P(re-run within budget) at each
  grid point against the fresh-seed re-runs of that point, binned by P: the mean P and the observed frequency
  per bin, a bin with >= CALIBRATION_MIN_POINTS pairs off by more than 0.1 marked.

Targets (issues 21 and 38): mean regret over fresh seeds <= 0.005 at <= 40 % of the grid's tokens; the pick within
budget on >= 90 % of fresh re-runs (fresh seed, fresh validation draw); P off by at most 0.1 in every bin with >= 5
points.
Everything lives in --workdir and resumes: a finished sweep or re-measure is read back, not run again. On
2 cores the grids alone are 4 x 25 full trials (about 4 x 12 minutes unloaded); the whole benchmark takes hours.

    .venv/bin/python benchmarks/decision_quality.py [--spec search_spaces/lr_mix.yaml] [--seeds 0 1 2]
        [--workdir runs-decision-quality] [--grid RUN_DIR] [--only-default]
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
from fresh_draws import DrawMismatch, FreshDraws, Text, mismatches, settle, text_of, texts_used
from rich.console import Console
from rich.table import Table

from sweep.choice.best import read_best
from sweep.choice.feasible import Score, is_feasible, ranked_feasible
from sweep.choice.surrogate import fit_surrogate
from sweep.files.rundir import RUNS, RunDir
from sweep.run.prepare import Prepared, prepare
from sweep.run.sample_size import validation_draws
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
FRESH_SEEDS = (90_001, 90_002, 90_003)
"""Proxy seeds of the re-measures: far from every seed a sweep here trains with (SWEEP_PROXY_SEEDS plus its
replicates' and confirmation trials' few seeds after it)."""
SWEEP_PROXY_STRIDE = 1_000
"""Variant default-seed{s} trains its trials at proxy seed s x this (0: the spec's own), its replicates and
confirmation trials at the seeds just after it."""
REMEASURE_FORMAT = 3
"""Of remeasured.json in the work directory; a file of another format is measured again."""
CALIBRATION_BINS = 10
CALIBRATION_MIN_POINTS = 5
"""A calibration bin is judged (|P - frequency| <= 0.1) only with at least this many (point, seed) pairs."""


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
    confirmation: str
    predicted_gain: float | None
    fresh_gain: float
    """Mean over FRESH_SEEDS."""
    fresh_forgetting: float
    regret: float
    within_budget: int
    """Fresh re-runs (fresh seed, fresh validation draw) within the budget, of len(FRESH_SEEDS)."""
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
        self.forgetting_budget = self.raw["objective"]["forgetting_budget"]
        self.proxy_seed = self.raw["proxy"]["seed"]
        self.remeasured_file = self.workdir / "remeasured.json"
        stored = json.loads(self.remeasured_file.read_text()) if self.remeasured_file.is_file() else {}
        # Re-measures of an earlier format are measured again: before 2 they kept the validation sets of the spec's
        # proxy seed, before 3 a fresh seed's validation sets overlapped the sweeps' text.
        self.remeasured: dict[str, dict] = (
            stored.get("measures", {}) if stored.get("format") == REMEASURE_FORMAT else {}
        )
        self.used: dict[str, dict[int, set[Text]]] = {}
        """The text each sweep here measured on, per draw (settle_draws)."""
        self.draws: FreshDraws | None = None
        """The draw each fresh seed is measured on, once settle_draws has checked the draws."""
        self._prepared: dict[int, Prepared] = {}

    def spec(self, name: str, *, space: dict | None = None, proxy: dict | None = None, **search: Any) -> Path:
        raw = json.loads(json.dumps(self.raw))
        raw["space"].update(space or {})
        raw["proxy"].update(proxy or {})
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

    def settle_draws(self, runs: list[RunDir]) -> FreshDraws:
        """The fresh draws, once the benchmark's draws 0 .. D - 1 are shown to hold the text every sweep in `runs`
        (and a sweep of the spec prepared now) was measured on; DrawMismatch otherwise (benchmarks/fresh_draws.py)."""
        spec = load_spec(self.spec("draws"))
        sweep_draws = validation_draws(spec)
        own = prepare(spec)
        self.used = {run.path.name: texts_used(run) for run in runs}
        self.used["a sweep of the spec prepared now"] = {d: {text_of(p)} for d, p in enumerate(own.valid_draws)}
        self.draws = settle(lambda extra: prepare(spec, extra_draws=extra), self.used, sweep_draws, FRESH_SEEDS)
        return self.draws

    def prepared(self, seed: int) -> Prepared:
        """The spec at proxy seed `seed`, with the fresh draws past its own; its draws 0 .. D - 1 checked again."""
        if self.draws is None:
            raise RuntimeError("settle_draws first: no fresh measure before the draws are checked")
        if seed not in self._prepared:
            spec = load_spec(self.spec(f"remeasure-seed{seed}", proxy={"seed": seed}))
            prepared = prepare(spec, extra_draws=self.draws.stable_extra)
            found = mismatches(self.used, prepared.valid_draws[: self.draws.sweep_draws])
            if found:
                raise DrawMismatch(f"proxy seed {seed}: " + "; ".join(found))
            self._prepared[seed] = prepared
        return self._prepared[seed]

    def remeasure(self, point: Point, seed: int, draw: int) -> Measured:
        """One proxy trial at the point, proxy seed `seed`, measured on validation draw `draw`, on two threads; kept
        in remeasured.json.

        The proxy seed picks the validation sequences within the draw as well as the training seed (ProxyConfig.seed):
        a re-measure at seed s is what a grid at proxy seed s measures, on the draw it names."""
        key = f"{point.key}#{seed}#draw{draw}"
        if key not in self.remeasured:
            trial = self.prepared(seed).trial_config(
                lr_fraction=point.lr_fraction,
                mix=MixRatio.parse(point.mix),
                output_dir=self.workdir / "remeasure" / key.replace(":", "-").replace("#", "-"),
                seed=seed,
                valid_draw=draw,
            )
            result = run_trial(trial.model_copy(update={"threads": 2}), lambda metrics: False)
            final = result.history[-1]
            self.remeasured[key] = {"domain_gain": final.domain_gain, "forgetting": final.forgetting}
            stored = {"format": REMEASURE_FORMAT, "measures": self.remeasured}
            self.remeasured_file.write_text(json.dumps(stored, indent=2))
        return Measured(**self.remeasured[key])

    def fresh(self, point: Point) -> list[Measured]:
        """The point at every fresh seed, each on its fresh validation draw."""
        if self.draws is None:
            raise RuntimeError("settle_draws first: no fresh measure before the draws are checked")
        return [self.remeasure(point, seed, self.draws.by_seed[seed]) for seed in FRESH_SEEDS]

    def grid(self, name: str) -> RunDir:
        """The grid as a `sweep run` at the spec's proxy seed: measured on draw 0, as every sweep's search is."""
        spec = self.spec(
            name, space={"lr_fraction": list(GRID_LR_FRACTIONS)}, sampler="grid", pruner={"type": "none"},
            forgetting_guard=None, replicates={"top": 0}, confirmation={"seeds": 0},
        )  # fmt: skip
        return self.sweep(name, spec)[0]

    def other_text(self, run: RunDir) -> list[str]:
        """How the run's trials were measured on other text than the benchmark's draws (none: the same text)."""
        if self.draws is None:
            raise RuntimeError("settle_draws first: the draws to compare with are not checked yet")
        ours = self.prepared(self.proxy_seed).valid_draws[: self.draws.sweep_draws]
        return mismatches({run.path.name: texts_used(run)}, ours)


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


def ground_truth(bench: Bench, grid: Path | None, console: Console) -> tuple[dict[Point, Measured], int]:
    """The grid at the spec's proxy seed (given, or run here), checked by its text (the draws' own) and by
    re-measuring its best feasible point on draw 0."""
    run = bench.grid("grid") if grid is None else RunDir(grid)
    other = bench.other_text(run)
    if other and grid is None:
        raise DrawMismatch("; ".join(other))
    if other:
        console.print(f"grid {run.path}: {'; '.join(other)}: stale, running the grid here")
        return ground_truth(bench, None, console)
    truth, tokens = grid_truth(run)
    expected = len(GRID_LR_FRACTIONS) * len(bench.raw["space"]["mix"])
    if len(truth) < expected:
        raise SystemExit(f"the grid {run.path} has {len(truth)} completed points of {expected}")
    point, measured = best_feasible(truth, bench.forgetting_budget)
    again = bench.remeasure(point, bench.proxy_seed, 0)
    if abs(again.domain_gain - measured.domain_gain) <= REPRODUCE_TOLERANCE:
        console.print(f"grid {run.path}: best feasible {point.key} gain {measured.domain_gain:.4f}, reproduced")
        return truth, tokens
    if grid is None:
        raise SystemExit(
            f"the grid run here does not reproduce its best point {point.key}: the proxy is not deterministic"
        )
    console.print(
        f"grid {run.path}: {point.key} re-measured at gain {again.domain_gain:.4f}, the grid says "
        f"{measured.domain_gain:.4f}: stale, running the grid here"
    )
    return ground_truth(bench, None, console)


def fresh_truth(bench: Bench, points: list[Point]) -> tuple[Point, float]:
    """Measures the grid's points at every fresh seed on its fresh draw (one proxy trial each, run to its end as the
    grid's are); the best feasible point on the fresh means and its mean gain."""
    point, mean = best_feasible({point: _mean(bench.fresh(point)) for point in points}, bench.forgetting_budget)
    return point, mean.domain_gain


def variants(seeds: list[int], *, only_default: bool = False) -> dict[str, dict[str, Any]]:
    """Each variant's change to the spec's proxy ("proxy") and search sections."""
    found = {f"default-seed{seed}": {"seed": seed, "proxy": {"seed": seed * SWEEP_PROXY_STRIDE}} for seed in seeds}
    if only_default:
        return found
    found["random"] = {"sampler": "random", "seed": seeds[0]}
    found["unpruned"] = {"pruner": {"type": "none"}, "forgetting_guard": None, "seed": seeds[0]}
    return found


def picked(name: str, run: RunDir) -> Point:
    """The sweep's pick (best.json's: the confirmed one, or the last tried)."""
    summary = read_best(run)
    if summary.pick is None or summary.pick.point is None:
        raise SystemExit(f"{name}: the sweep picked nothing ({summary.verdict})")
    return Point(summary.pick.point.lr_fraction, summary.pick.point.mix)


def evaluate(bench: Bench, name: str, run: RunDir, wall: float, best_gain: float, grid_tokens: int) -> Outcome:
    summary = read_best(run)
    pick = summary.pick
    point = picked(name, run)
    fresh = bench.fresh(point)
    mean = _mean(fresh)
    return Outcome(
        variant=name,
        point=point,
        source=pick.source.value,
        confirmation=summary.confirmation.outcome.value,
        predicted_gain=pick.gain.mean if pick.gain else None,
        fresh_gain=mean.domain_gain,
        fresh_forgetting=mean.forgetting,
        regret=best_gain - mean.domain_gain,
        within_budget=sum(is_feasible(m.forgetting, bench.forgetting_budget) for m in fresh),
        tokens_fraction=summary.cost.tokens_used / grid_tokens,
        wall_seconds=wall,
    )


def calibration_pairs(bench: Bench, run: RunDir, grid_points: list[Point]) -> list[tuple[float, bool]]:
    """(the run's surrogate P(within budget) at a grid point, whether one fresh re-run there was within)."""
    record = run.read_record()
    sweep = load_study(url=record.url(run), name=record.study_name)
    surrogate = fit_surrogate(trial_rows(sweep), sweep.plan.space)
    if surrogate is None:
        return []
    points = sorted(grid_points, key=lambda point: point.key)
    shares = [MixRatio.parse(point.mix).domain_share for point in points]
    _, forgetting = surrogate.predict([point.lr_fraction for point in points], shares)
    probability = forgetting.probability_at_most(bench.forgetting_budget)
    return [
        (float(p), is_feasible(measured.forgetting, bench.forgetting_budget))
        for point, p in zip(points, probability)
        for measured in bench.fresh(point)
    ]


def calibration_table(pairs: list[tuple[float, bool]]) -> tuple[Table, list[dict]]:
    """P binned into CALIBRATION_BINS equal bins against the observed frequency; misses marked."""
    table = Table(title="Calibration: surrogate P(re-run within budget) at the grid's points vs fresh re-runs")
    for column in ("P bin", "pairs", "mean P", "observed", "off by", "judged"):
        table.add_column(column, justify="right")
    rows = []
    for k in range(CALIBRATION_BINS):
        low, high = k / CALIBRATION_BINS, (k + 1) / CALIBRATION_BINS
        inside = [(p, hit) for p, hit in pairs if low <= p < high or (k == CALIBRATION_BINS - 1 and p == 1.0)]
        if not inside:
            continue
        mean_p = sum(p for p, _ in inside) / len(inside)
        observed = sum(hit for _, hit in inside) / len(inside)
        judged = len(inside) >= CALIBRATION_MIN_POINTS
        verdict = ("ok" if abs(mean_p - observed) <= 0.1 else "MISS") if judged else "too few"
        rows.append({"low": low, "high": high, "pairs": len(inside), "mean_p": mean_p, "observed": observed,
                     "verdict": verdict})  # fmt: skip
        table.add_row(f"[{low:.1f}, {high:.1f})", str(len(inside)), f"{mean_p:.2f}", f"{observed:.2f}",
                      f"{mean_p - observed:+.2f}", verdict)  # fmt: skip
    return table, rows


def outcome_table(outcomes: list[Outcome], best_gain: float, budget: float) -> Table:
    title = (
        f"Decision quality at fresh proxy seeds {FRESH_SEEDS} on fresh validation draws (grid best feasible gain "
        f"{best_gain:.4f}, budget {budget})"
    )
    table = Table(title=title)
    for column in ("variant", "pick", "source", "confirmation", "predicted gain", "fresh gain", "fresh forgetting",
                   "regret", "in budget", "tokens / grid", "wall s"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("variant", "pick", "source", "confirmation") else "right")
    for o in outcomes:
        table.add_row(
            o.variant, f"{o.point.lr_fraction:.4g} @ {o.point.mix}", o.source, o.confirmation,
            "" if o.predicted_gain is None else f"{o.predicted_gain:.4f}", f"{o.fresh_gain:.4f}",
            f"{o.fresh_forgetting:.4f}", f"{o.regret:+.4f}", f"{o.within_budget}/{len(FRESH_SEEDS)}",
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
                ""
                if m is None
                else f"{m.domain_gain:.4f} / {m.forgetting:.4f}{'*' * (not is_feasible(m.forgetting, budget))}"
            )
        table.add_row(f"{lr:g}", *cells)
    return table


def _mean(measures: list[Measured]) -> Measured:
    return Measured(
        domain_gain=sum(m.domain_gain for m in measures) / len(measures),
        forgetting=sum(m.forgetting for m in measures) / len(measures),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, default=Path("search_spaces/lr_mix.yaml"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="sampler (and proxy) seeds")
    parser.add_argument("--workdir", type=Path, default=Path("runs-decision-quality"))
    parser.add_argument("--grid", type=Path, help="a finished grid run to take as the ground truth (checked)")
    parser.add_argument(
        "--only-default", action="store_true", help="leave out random search and no pruning (when time is short)"
    )
    args = parser.parse_args()

    console = Console(width=180)  # the tables are read from a log as often as from a terminal
    bench = Bench(args.spec, args.workdir)
    sweeps = {
        name: bench.sweep(name, bench.spec(name, **change))
        for name, change in variants(args.seeds, only_default=args.only_default).items()
    }
    try:
        console.print(bench.settle_draws([run for run, _ in sweeps.values()]).describe())
        outcomes, bins, best_gain = measure(bench, sweeps, args.grid, console)
    except DrawMismatch as error:
        print(f"error: {error}", file=sys.stderr)
        raise SystemExit(2) from None
    assert bench.draws is not None  # settled above
    console.print(bench.draws.describe())
    _print_verdict(console, outcomes, bins)
    results = {"budget": bench.forgetting_budget, "fresh_seeds": FRESH_SEEDS, "fresh_draws": bench.draws.by_seed,
               "stable_extra_draws": bench.draws.stable_extra, "grid_best_gain": best_gain,
               "outcomes": [asdict(o) for o in outcomes], "calibration": bins}  # fmt: skip
    (bench.workdir / "decision_quality.json").write_text(json.dumps(results, indent=2))


def measure(
    bench: Bench, sweeps: dict[str, tuple[RunDir, float]], grid: Path | None, console: Console
) -> tuple[list[Outcome], list[dict], float]:
    """The picks' fresh re-runs, the grid and its fresh re-runs, and what they say: each variant's outcome, the
    calibration bins and the grid's best feasible gain on the fresh means. Prints as it goes."""
    for name, (run, _) in sweeps.items():  # first: whether the picks hold on fresh text is known before the grids end
        point = picked(name, run)
        fresh = bench.fresh(point)
        within = sum(is_feasible(m.forgetting, bench.forgetting_budget) for m in fresh)
        forgetting = ", ".join(f"{m.forgetting:.4f}" for m in fresh)
        console.print(f"{name}: pick {point.key} within budget on {within}/{len(fresh)} fresh re-runs ({forgetting})")
    truth, grid_tokens = ground_truth(bench, grid, console)
    console.print(grid_table(truth, bench.forgetting_budget))
    best_point, best_gain = fresh_truth(bench, list(truth))
    console.print(f"best feasible on the fresh means: {best_point.key}, gain {best_gain:.4f}")
    outcomes = [evaluate(bench, name, run, wall, best_gain, grid_tokens) for name, (run, wall) in sweeps.items()]
    console.print(outcome_table(outcomes, best_gain, bench.forgetting_budget))
    pairs = [
        pair
        for name, (run, _) in sweeps.items()
        if name.startswith("default")
        for pair in calibration_pairs(bench, run, list(truth))
    ]
    calibration, bins = calibration_table(pairs)
    console.print(calibration)
    return outcomes, bins, best_gain


def _print_verdict(console: Console, outcomes: list[Outcome], bins: list[dict]) -> None:
    default = [o for o in outcomes if o.variant.startswith("default")]
    runs = len(default) * len(FRESH_SEEDS)
    console.print(
        f"default over {len(default)} sampler+proxy seeds: mean regret {sum(o.regret for o in default) / len(default):+.4f} "
        f"(target <= 0.005), worst {max(o.regret for o in default):+.4f}; pick within budget on "
        f"{sum(o.within_budget for o in default)}/{runs} fresh re-runs (target >= 90 %); tokens "
        f"{max(o.tokens_fraction for o in default):.0%} of the grid at most (target <= 40 %); calibration bins "
        f"missed: {sum(b['verdict'] == 'MISS' for b in bins)} of {sum(b['verdict'] != 'too few' for b in bins)} judged"
    )


if __name__ == "__main__":
    main()
