"""Decision quality: how close the default sweep's pick comes to the best point of the text population, measured on
proxy runs and text the sweep never saw, and how well the surrogate's P(within budget) is calibrated.

Fresh text: each validation corpus of --spec is split by work (benchmarks/fresh_text.py): the sweeps are given two
thirds of the works, and a third is kept apart as text none of them reads. Every fresh measurement is a proxy trial
at a fresh seed (FRESH_SEEDS: proxy seeds that no sweep here trains with) whose final figures are measured on the
whole fresh text, document by document, with their text error: an estimate of the text population, not one draw of
it. The ground truth is a grid over the default space (5 lr_fractions x its listed mixes), every point run to its
end at a fresh seed (GRID_SEEDS) on the fresh text; its best feasible point is the one whose fresh forgetting is
within the budget with the highest fresh domain_gain. Each variant is a whole `sweep run` of the spec on the sweeps'
text with one change: the default spec at several seeds (the sampler's seed and the sweep's proxy seed,
SWEEP_PROXY_STRIDE apart), random search with the same trial budget, and the default without pruning. Each
variant's pick (best.json's: the confirmed one, or the last tried) is re-run at every fresh seed on the fresh text,
and the benchmark reports:

- regret: the grid's best feasible fresh domain_gain less the pick's fresh mean domain_gain (over FRESH_SEEDS);
- regret to the certifiable best: the same against the best point a rule held to the spec's P(within budget) could
  call within budget from its own fresh measure (forgetting + z x its text error <= the budget, z the normal's
  quantile at that P), among the grid's points and the picks' (at GRID_SEEDS): the grid's best feasible point may
  sit on the budget itself, where no such rule may go, and this says how much of the regret is that margin;
- within budget: on how many of the pick's fresh re-runs forgetting stays within the budget;
- tokens: what the sweep trained on (pruned trials, replicates and confirmation trials included) over what the
  grid's 25 full trials train on;
- calibration: for every default variant's surrogate (fitted to its trials on the pool), P(a re-run within the
  budget) at each grid point, a re-run's text error being that of the fresh text it is measured on, against that
  point's fresh re-runs, binned by P: the mean P and the observed frequency per bin, a bin with >=
  CALIBRATION_MIN_POINTS pairs off by more than 0.1 marked; and each confirmation round's P and predicted interval
  against what its trials measured on their draw;
- cost: the seconds the sweeps' trials spent training and evaluating (interim evaluations and final figures).

Targets (issue 49): the pick within budget on >= 90 % of fresh re-runs; mean regret <= 0.005; every judged
calibration bin within 0.1; tokens <= 40 % of the grid's. Everything lives in --workdir and resumes: a finished
sweep or fresh measure is read back, not run again. On 2 cores the fresh grid is 25 full trials and the picks' re-runs
up to 9 more (about 20 minutes unloaded); with three sweeps the benchmark takes about an hour per corpus unloaded.

    .venv/bin/python benchmarks/decision_quality.py [--spec search_spaces/lr_mix.yaml] [--seeds 0 1 2]
        [--workdir runs-decision-quality] [--only-default]
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
from fresh_text import Split, describe, split_corpus
from rich.console import Console
from rich.table import Table
from scipy.stats import norm

from sweep.choice.best import read_best
from sweep.choice.feasible import Score, is_feasible, ranked_feasible
from sweep.choice.surrogate import fit_surrogate
from sweep.files.compat import TRIAL_RESULT
from sweep.files.records import read_model
from sweep.files.rundir import RUNS, RunDir
from sweep.run.prepare import Prepared, prepare
from sweep.spec.spec import load_spec
from sweep.study.study import load_study
from sweep.study.table import trial_rows
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial
from train_entry.trial_config import TrialResult

GRID_LR_FRACTIONS = (0.05, 0.08, 0.12, 0.2, 0.3)
"""About evenly spaced in log over the default range 0.05-0.30, at round values."""
FRESH_SEEDS = (90_001, 90_002, 90_003)
"""Proxy seeds of the picks' fresh re-runs: far from every seed a sweep here trains with (SWEEP_PROXY_SEEDS plus its
replicates' and confirmation trials' few seeds after it)."""
GRID_SEEDS = FRESH_SEEDS[:1]
"""The grid's fresh seeds: one. On the whole fresh text a point's seed-to-seed spread is ~0.001 in domain_gain and
~0.0005 in forgetting (the sweeps' replicates, BENCHMARKS.md), a fifth of the regret target, while each further seed
costs 25 full trials (on a 2-core machine shared with other work, 25 x 3-8 minutes)."""
SWEEP_PROXY_STRIDE = 1_000
"""Variant default-seed{s} trains its trials at proxy seed s x this (0: the spec's own), its replicates and
confirmation trials at the seeds just after it."""
REMEASURE_FORMAT = 4
"""Of remeasured.json in the work directory; a file of another format is measured again (4: figures on the whole
fresh text, with their text error and the trial's seconds)."""
CALIBRATION_BINS = 10
CALIBRATION_MIN_POINTS = 5
"""A calibration bin is judged (|P - frequency| <= 0.1) only with at least this many (point, seed) pairs."""
SIDES = ("domain", "general", "non_english")


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
    gain_text_error: float
    forgetting_text_error: float
    train_seconds: float
    eval_seconds: float


@dataclass(frozen=True)
class Outcome:
    variant: str
    point: Point
    source: str
    confirmation: str
    predicted_gain: float | None
    predicted_forgetting: float | None
    """The surrogate's, on the sweep's own validation pool: beside the fresh figures, how far that text and the
    population differ at the pick."""
    fresh_gain: float
    """Mean over FRESH_SEEDS."""
    fresh_forgetting: float
    regret: float
    certified_regret: float
    """Against the certifiable best (best_certifiable)."""
    within_budget: int
    """Fresh re-runs (fresh seed, fresh text) within the budget, of len(FRESH_SEEDS)."""
    tokens_fraction: float
    wall_seconds: float
    train_seconds: float
    """Its trials' training seconds, summed (TrialUsage.train_seconds)."""
    eval_seconds: float
    """Its trials' evaluation seconds, summed: interim evaluations and final figures (TrialUsage.eval_seconds)."""


class Bench:
    """The benchmark's working directory: the split validation text, one spec file and run directory per variant,
    and the fresh measures."""

    def __init__(self, spec_path: Path, workdir: Path) -> None:
        self.workdir = workdir.resolve()
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Corpus paths come out absolute, so the variants' specs load from the work directory.
        self.raw = load_spec(spec_path).model_dump(mode="json", exclude_none=True)
        self.raw["tracking"] = {"wandb": {"mode": "disabled"}}
        self.forgetting_budget = self.raw["objective"]["forgetting_budget"]
        self.min_probability = self.raw["objective"]["pick"]["min_probability"]
        self.splits = self._split()
        self.remeasured_file = self.workdir / "remeasured.json"
        stored = json.loads(self.remeasured_file.read_text()) if self.remeasured_file.is_file() else {}
        self.remeasured: dict[str, dict] = (
            stored.get("measures", {}) if stored.get("format") == REMEASURE_FORMAT else {}
        )
        self._fresh: Prepared | None = None

    def _split(self) -> dict[str, Split]:
        """Each validation corpus split by work; the variants' specs read the sweeps' part."""
        splits = {}
        for side in SIDES:
            corpus = self.raw["data"].get(side)
            if corpus is None:
                continue
            valid = corpus["valid"] if isinstance(corpus["valid"], list) else [corpus["valid"]]
            if len(valid) != 1 or not valid[0].endswith(".jsonl"):
                raise SystemExit(f"data.{side}.valid must be one JSONL file to be split into fresh text, got {valid}")
            splits[side] = split_corpus(Path(valid[0]), self.workdir / "text" / side)
            corpus["valid"] = [str(splits[side].sweep)]
        return splits

    def spec(self, name: str, *, space: dict | None = None, proxy: dict | None = None, **search: Any) -> Path:
        raw = json.loads(json.dumps(self.raw))
        raw["space"].update(space or {})
        raw["proxy"].update(proxy or {})
        raw["search"].update(search)
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

    def fresh_prepared(self) -> Prepared:
        """The spec on the fresh text, which is all of its pool (no confirmation draws)."""
        if self._fresh is None:
            raw = json.loads(json.dumps(self.raw))
            for side, split in self.splits.items():
                raw["data"][side]["valid"] = [str(split.fresh)]
            raw["search"]["confirmation"] = {"seeds": 0}
            path = self.workdir / "fresh.yaml"
            path.write_text(yaml.safe_dump(raw, sort_keys=False))
            self._fresh = prepare(load_spec(path))
        return self._fresh

    def remeasure(self, point: Point, seed: int) -> Measured:
        """One proxy trial at the point and proxy seed `seed`, its figures on the whole fresh text, on two threads;
        kept in remeasured.json."""
        key = f"{point.key}#{seed}"
        if key not in self.remeasured:
            trial = self.fresh_prepared().trial_config(
                lr_fraction=point.lr_fraction,
                mix=MixRatio.parse(point.mix),
                output_dir=self.workdir / "remeasure" / key.replace(":", "-").replace("#", "-"),
                seed=seed,
            )
            result = run_trial(trial.model_copy(update={"threads": 2}), lambda metrics: False)
            figures, error, usage = result.figures, result.text_error, result.usage
            self.remeasured[key] = asdict(
                Measured(
                    domain_gain=figures.domain_gain,
                    forgetting=figures.forgetting,
                    gain_text_error=error.domain_gain,
                    forgetting_text_error=error.forgetting,
                    train_seconds=usage.train_seconds,
                    eval_seconds=usage.eval_seconds,
                )
            )
            stored = {"format": REMEASURE_FORMAT, "measures": self.remeasured}
            self.remeasured_file.write_text(json.dumps(stored, indent=2))
        return Measured(**self.remeasured[key])

    def fresh(self, point: Point, seeds: tuple[int, ...] = FRESH_SEEDS) -> list[Measured]:
        """The point at every one of `seeds`, on the fresh text."""
        return [self.remeasure(point, seed) for seed in seeds]

    def grid_points(self) -> list[Point]:
        return [Point(lr, mix) for lr in GRID_LR_FRACTIONS for mix in self.raw["space"]["mix"]]

    def grid_tokens(self) -> int:
        """What the grid's full trials train on: each the proxy's steps x batch x seq_len tokens."""
        proxy = self.raw["proxy"]
        return len(self.grid_points()) * proxy["steps"] * proxy["batch_size"] * proxy["seq_len"]


def best_feasible(truth: dict[Point, Measured], budget: float) -> tuple[Point, Measured]:
    """The grid's best feasible point under the sweep's own rule (sweep/choice/feasible.py), ties to the earlier point."""
    items = list(truth.items())
    ranked = ranked_feasible(
        range(len(items)), budget, lambda k: Score(items[k][1].domain_gain, items[k][1].forgetting, k)
    )
    if not ranked:
        raise SystemExit(f"no grid point is within the forgetting budget {budget}: the ground truth has no optimum")
    return items[ranked[0]]


def best_certifiable(
    measured: dict[Point, Measured], budget: float, probability: float
) -> tuple[Point, Measured] | None:
    """The point of highest fresh domain_gain whose fresh forgetting a rule held to P(within budget) >= `probability`
    could call within the budget from that measure alone: forgetting + z x its text error <= budget (None: none)."""
    z = float(norm.ppf(probability))
    certified = [item for item in measured.items() if item[1].forgetting + z * item[1].forgetting_text_error <= budget]
    return max(certified, key=lambda item: item[1].domain_gain, default=None)


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


def trial_seconds(run: RunDir) -> tuple[float, float]:
    """(training, evaluation) seconds summed over the run's trials that wrote a result."""
    train = evaluate = 0.0
    for path in sorted(run.trials.glob("*/result.json")):
        usage = read_model(path, TrialResult, fmt=TRIAL_RESULT).usage
        if usage is not None:
            train, evaluate = train + usage.train_seconds, evaluate + usage.eval_seconds
    return train, evaluate


def evaluate(bench: Bench, name: str, run: RunDir, wall: float, best_gain: float, certified_gain: float) -> Outcome:
    summary = read_best(run)
    pick = summary.pick
    point = picked(name, run)
    fresh = bench.fresh(point)
    mean = _mean(fresh)
    train, evaluation = trial_seconds(run)
    return Outcome(
        variant=name,
        point=point,
        source=pick.source.value,
        confirmation=summary.confirmation.outcome.value,
        predicted_gain=pick.gain.mean if pick.gain else None,
        predicted_forgetting=pick.forgetting.mean if pick.forgetting else None,
        fresh_gain=mean.domain_gain,
        fresh_forgetting=mean.forgetting,
        regret=best_gain - mean.domain_gain,
        certified_regret=certified_gain - mean.domain_gain,
        within_budget=sum(is_feasible(m.forgetting, bench.forgetting_budget) for m in fresh),
        tokens_fraction=summary.cost.tokens_used / bench.grid_tokens(),
        wall_seconds=wall,
        train_seconds=train,
        eval_seconds=evaluation,
    )


def calibration_pairs(bench: Bench, run: RunDir) -> list[tuple[float, bool]]:
    """(the run's surrogate P(a re-run within budget) at a grid point, whether one fresh re-run there was within), a
    re-run's text error being the fresh measurement's own."""
    record = run.read_record()
    sweep = load_study(url=record.url(run), name=record.study_name)
    surrogate = fit_surrogate(trial_rows(sweep), sweep.plan.space)
    if surrogate is None:
        return []
    pairs = []
    for point in sorted(bench.grid_points(), key=lambda point: point.key):
        _, forgetting = surrogate.predict([point.lr_fraction], [MixRatio.parse(point.mix).domain_share])
        for measured in bench.fresh(point, GRID_SEEDS):
            p = float(
                forgetting.probability_at_most(bench.forgetting_budget, text_sd=measured.forgetting_text_error)[0]
            )
            pairs.append((p, is_feasible(measured.forgetting, bench.forgetting_budget)))
    return pairs


def confirmation_rows(runs: dict[str, RunDir]) -> list[dict]:
    """Every confirmation round of the runs: its P and whether its trials' mean was within the budget, and where its
    means fell against their predicted intervals."""
    found = []
    for name, run in runs.items():
        for point in read_best(run).confirmation.rounds:
            found.append({
                "variant": name, "round": point.round + 1, "point": f"{point.lr_fraction:.4g} @ {point.mix}",
                "p": point.probability_within_budget, "within": point.within_budget,
                "gain": point.gain_against.value if point.gain_against else None,
                "forgetting": point.forgetting_against.value if point.forgetting_against else None,
            })  # fmt: skip
    return found


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
        f"Decision quality at fresh proxy seeds {FRESH_SEEDS} on the fresh text (grid best feasible gain "
        f"{best_gain:.4f}, budget {budget})"
    )
    table = Table(title=title)
    # Predicted: the surrogate's, on the sweep's own pool; fresh: the pick's mean over its fresh re-runs.
    for column in ("variant", "pick", "source", "confirmation", "gain predicted / fresh",
                   "forgetting predicted / fresh", "regret", "to certifiable", "in budget", "tokens / grid", "wall s",
                   "train s", "eval s"):  # fmt: skip
        table.add_column(column, justify="left" if column in ("variant", "pick", "source", "confirmation") else "right")
    for o in outcomes:
        table.add_row(
            o.variant, f"{o.point.lr_fraction:.4g} @ {o.point.mix}", o.source, o.confirmation,
            f"{_shown(o.predicted_gain)} / {o.fresh_gain:.4f}",
            f"{_shown(o.predicted_forgetting)} / {o.fresh_forgetting:.4f}",
            f"{o.regret:+.4f}", f"{o.certified_regret:+.4f}",
            f"{o.within_budget}/{len(FRESH_SEEDS)}",
            f"{o.tokens_fraction:.0%}", f"{o.wall_seconds:.0f}", f"{o.train_seconds:.0f}", f"{o.eval_seconds:.0f}",
        )  # fmt: skip
    return table


def _shown(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def grid_table(truth: dict[Point, Measured], budget: float) -> Table:
    """The ground truth: fresh mean domain_gain / forgetting at every grid point, over budget marked."""
    mixes = list(dict.fromkeys(point.mix for point in truth))
    table = Table(title="Ground truth on the fresh text: mean domain_gain / forgetting ('*' over the budget)")
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
    count = len(measures)
    return Measured(
        domain_gain=sum(m.domain_gain for m in measures) / count,
        forgetting=sum(m.forgetting for m in measures) / count,
        gain_text_error=max(m.gain_text_error for m in measures),
        forgetting_text_error=max(m.forgetting_text_error for m in measures),
        train_seconds=sum(m.train_seconds for m in measures),
        eval_seconds=sum(m.eval_seconds for m in measures),
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--spec", type=Path, default=Path("search_spaces/lr_mix.yaml"))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="sampler (and proxy) seeds")
    parser.add_argument("--workdir", type=Path, default=Path("runs-decision-quality"))
    parser.add_argument(
        "--only-default", action="store_true", help="leave out random search and no pruning (when time is short)"
    )
    parser.add_argument("--truth-only", action="store_true", help="measure the fresh grid alone (its sweeps later)")
    args = parser.parse_args()

    console = Console(width=180)  # the tables are read from a log as often as from a terminal
    bench = Bench(args.spec, args.workdir)
    for line in describe(bench.splits):
        console.print(line)
    truth = {point: _mean(bench.fresh(point, GRID_SEEDS)) for point in bench.grid_points()}
    console.print(grid_table(truth, bench.forgetting_budget))
    best_point, best = best_feasible(truth, bench.forgetting_budget)
    console.print(f"best feasible on the fresh means: {best_point.key}, gain {best.domain_gain:.4f}, forgetting "
                  f"{best.forgetting:.4f} (text error of one fresh measure: ± {best.gain_text_error:.4f}, "
                  f"± {best.forgetting_text_error:.4f})")  # fmt: skip
    if args.truth_only:
        return
    sweeps = {
        name: bench.sweep(name, bench.spec(name, **change))
        for name, change in variants(args.seeds, only_default=args.only_default).items()
    }
    picks = {picked(name, run) for name, (run, _) in sweeps.items()}
    reachable = truth | {point: bench.remeasure(point, GRID_SEEDS[0]) for point in picks}
    certified = best_certifiable(reachable, bench.forgetting_budget, bench.min_probability)
    if certified is None:
        raise SystemExit("no measured point is certifiably within the budget: regret has no reachable reference")
    console.print(f"certifiable best (forgetting + z x its text error within the budget at P {bench.min_probability}):"
                  f" {certified[0].key}, gain {certified[1].domain_gain:.4f}, forgetting "
                  f"{certified[1].forgetting:.4f} ± {certified[1].forgetting_text_error:.4f}")  # fmt: skip
    outcomes = [
        evaluate(bench, name, run, wall, best.domain_gain, certified[1].domain_gain)
        for name, (run, wall) in sweeps.items()
    ]
    console.print(outcome_table(outcomes, best.domain_gain, bench.forgetting_budget))
    defaults = {name: run for name, (run, _) in sweeps.items() if name.startswith("default")}
    pairs = [pair for run in defaults.values() for pair in calibration_pairs(bench, run)]
    calibration, bins = calibration_table(pairs)
    console.print(calibration)
    confirmations = confirmation_rows(defaults)
    _print_confirmations(console, confirmations)
    _print_verdict(console, outcomes, bins)
    results = {"budget": bench.forgetting_budget, "fresh_seeds": FRESH_SEEDS,
               "splits": {side: asdict(split) | {"sweep": str(split.sweep), "fresh": str(split.fresh)}
                          for side, split in bench.splits.items()},
               "grid_best": {"point": best_point.key, **asdict(best)},
               "certifiable_best": {"point": certified[0].key, **asdict(certified[1])},
               "outcomes": [asdict(o) for o in outcomes],
               "calibration": bins, "confirmations": confirmations}  # fmt: skip
    (bench.workdir / "decision_quality.json").write_text(json.dumps(results, indent=2, default=str))


def _print_confirmations(console: Console, rows: list[dict]) -> None:
    table = Table(title="Confirmation rounds: P against their trials' mean on their draw, and each mean against its "
                  "predicted 90 % interval")  # fmt: skip
    for column in ("variant", "round", "point", "P", "within", "domain_gain", "forgetting"):
        table.add_column(column)
    for row in rows:
        table.add_row(row["variant"], str(row["round"]), row["point"], f"{row['p']:.2f}" if row["p"] else "",
                      str(row["within"]), str(row["gain"]), str(row["forgetting"]))  # fmt: skip
    console.print(table)


def _print_verdict(console: Console, outcomes: list[Outcome], bins: list[dict]) -> None:
    default = [o for o in outcomes if o.variant.startswith("default")]
    runs = len(default) * len(FRESH_SEEDS)
    train, evaluation = sum(o.train_seconds for o in default), sum(o.eval_seconds for o in default)
    console.print(
        f"default over {len(default)} sampler+proxy seeds: mean regret {sum(o.regret for o in default) / len(default):+.4f} "
        f"(target <= 0.005), worst {max(o.regret for o in default):+.4f}, to the certifiable best "
        f"{sum(o.certified_regret for o in default) / len(default):+.4f}; pick within budget on "
        f"{sum(o.within_budget for o in default)}/{runs} fresh re-runs (target >= 90 %); tokens "
        f"{max(o.tokens_fraction for o in default):.0%} of the grid at most (target <= 40 %); calibration bins "
        f"missed: {sum(b['verdict'] == 'MISS' for b in bins)} of {sum(b['verdict'] != 'too few' for b in bins)} judged; "
        f"its trials spent {train:.0f} s training and {evaluation:.0f} s evaluating ({evaluation / train:.0%})"
    )


if __name__ == "__main__":
    main()
