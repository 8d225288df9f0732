"""Ladders whose rungs are scripted, not trained: each rung's real study (its grid enqueued, every trial recorded
through run_study_trial, as the trainable records a proxy trial) with loss curves drawn with noise from a known law
at the rung's own N, batch, tokens and schedule. The ladder's driver, law, report, status and promotion run on them
as on trained rungs. A module of its own (not conftest) so that tests import it by a name no other folder uses."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
from optuna.trial import TrialState

from sweep.choice.best import best_summary_with, write_best
from sweep.choice.observed import select
from sweep.files.rundir import RunDir, RunRecord
from sweep.ladder.driver import LadderOutcome, RungStart, run_ladder
from sweep.ladder.rungs import RungSpec, ladder_target
from sweep.law.model import Law
from sweep.run.driver import SweepOutcome
from sweep.spec.spec import load_spec
from sweep.study.study import open_study
from sweep.study.table import trial_rows
from sweep.study.trial import run_study_trial
from sweep.target.schedule import lr_mean
from tests.sweep.ladder.synthetic import BASE_DOMAIN, BASE_GENERAL, TRUTH
from tests.sweep.scripted import figures_of
from train_entry.trial_config import BaseLosses, Metrics, TrialResult, TrialStatus

BASE_LOSSES = BaseLosses(domain_loss=BASE_DOMAIN, general_loss=BASE_GENERAL)
"""What every rung's trials are measured against, as a trial stores it."""

GRID = {"lr_fraction": [0.05, 0.14, 0.4], "mix": ["8:1", "1:1", "1:3"]}
"""The bundled ladder's box on a 3 x 3 grid: a scripted trial costs a few SQLite writes per evaluation."""
LADDER = {"rungs": ["xxs", "xs", "s", "m"], "law": {"starts": 2, "refits": 4}}
PROXY = {"steps": 30, "batch_size": 16, "warmup_steps": 2, "eval_interval": 10}
"""Never trained: a batch of 16 at the largest rung gives the smaller rungs batches of 1, 2 and 7, as the bundled
ladder's; three evaluations per trial."""
GENTLE = TRUTH.model_copy(
    update={"general": TRUTH.general.model_copy(update={"values": TRUTH.general.values | {"size_exponent": 0.05}})}
)
"""The synthetic law with forgetting that shrinks slowly with N: its optimum at Llama 3.1 70B (lr_fraction 0.15,
domain share 0.47) lies inside the grid's box, where TRUTH's (0.77) lies above its lr_fraction."""
STOPPED = "stopped.json"
"""Beside a scripted ladder's runs/: its ladder.json when it had stopped after two rungs."""


def write_ladder_spec(write_tiny_spec, name: str, **ladder) -> Path:
    """A tiny spec with a ladder of the built-in presets on GRID, named `name`: the tiny spec's folder is shared by
    the test run's workers, so each test writes its own."""
    return write_tiny_spec(
        name,
        ladder=LADDER | ladder,
        space=GRID,
        proxy=PROXY,
        objective={"forgetting_budget": 0.01},
        search={"sampler": "grid", "num_trials": 9, "replicates": {"top": 0}, "pruner": {"type": "none"},
                "forgetting_guard": None},
    )  # fmt: skip


class LawRungs:
    """A RungRunner with no training: it opens the rung's real study, records its run directory, and runs every
    waiting grid trial with curves drawn from `law`; `stop_at` leaves that rung unfinished, so the ladder stops."""

    def __init__(self, law: Law = GENTLE, *, noise: float = 5e-4, stop_at: str | None = None) -> None:
        self.law, self.noise, self.stop_at = law, noise, stop_at
        self.started: list[str] = []

    def __call__(self, rung: RungSpec, run: RunDir, start: RungStart) -> SweepOutcome:
        self.started.append(rung.name)
        run.path.mkdir(parents=True, exist_ok=True)
        sweep = open_study(rung.spec.plan(), url=f"sqlite:///{run.path / 'optuna.db'}", name=start.study_name)
        run.write_record(RunRecord(study_name=start.study_name))
        waiting = sum(trial.state is TrialState.WAITING for trial in sweep.trials())
        for _ in range(waiting - (rung.name == self.stop_at)):
            trial = sweep.ask()
            point = sweep.plan.space.point(trial.params)
            curve = self.curve(rung, trial.number, point.lr_fraction, point.mix.domain_share)
            run_study_trial(sweep, trial.number, lambda report, curve=curve: _reported(curve, report), base=BASE_LOSSES)
        rows = trial_rows(sweep)
        plan = rung.spec.plan()
        selection = select(rows, forgetting_budget=plan.forgetting_budget, space=plan.space)
        summary = best_summary_with(None, selection, rows, plan)  # the ladder reads the study, not the surrogate
        write_best(summary, run)
        return SweepOutcome(rows=rows, selection=selection, summary=summary, planned=plan.planned_trials)

    def curve(self, rung: RungSpec, number: int, lr_fraction: float, share: float) -> list[Metrics]:
        design, proxy = rung.design, rung.spec.proxy
        rng = np.random.default_rng([design.parameters, number])
        curve = []
        for step in range(proxy.eval_interval, proxy.steps + 1, proxy.eval_interval):
            tokens = step * design.batch_size * proxy.seq_len
            where = (design.parameters, lr_fraction, lr_mean(proxy, steps=step, total_steps=proxy.steps) * tokens
                     / design.pretrain_tokens, share)  # fmt: skip
            forgetting = float(self.law.forgetting(*where)) + rng.normal(0, self.noise)
            gain = float(self.law.domain_gain(*where)) + rng.normal(0, self.noise)
            losses = {"domain_loss": BASE_DOMAIN * (1 - gain), "general_loss": BASE_GENERAL * (1 + forgetting)}
            measured = {"domain_gain": gain, "forgetting": forgetting, "train_loss": 3.0, **losses}
            curve.append(Metrics(step=step, tokens_seen=tokens, lr=lr_fraction * design.max_lr, **measured))
        return curve


def _reported(curve: list[Metrics], report) -> TrialResult:
    done = []
    for metrics in curve:
        done.append(metrics)
        if report(metrics):
            return _result(TrialStatus.STOPPED, done)
    return _result(TrialStatus.COMPLETED, done)


def _result(status: TrialStatus, history: list[Metrics]) -> TrialResult:
    last = history[-1]
    return TrialResult(
        status=status, steps=last.step, tokens_seen=last.tokens_seen, wall_seconds=0.1, history=history,
        figures=figures_of(last),
    )  # fmt: skip


class Quiet:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def message(self, text: str) -> None:
        self.lines.append(text)

    def start(self) -> None: ...

    def update(self, rows, *, planned, trial_ended, at_once) -> None: ...

    def stop(self) -> None: ...


def scripted_ladder(
    spec_path: Path, root: Path, rungs: LawRungs | None = None, *, fresh: bool = False, view: Quiet | None = None
) -> LadderOutcome:
    """runs/ladder/ under `root`, run with scripted rungs and matched to Llama 3.1 70B."""
    spec = load_spec(spec_path)
    run = RunDir(root / "runs" / "ladder")
    return run_ladder(spec, run, ladder_target(spec), fresh=fresh, view=view or Quiet(), run_rung=rungs or LawRungs())


def stopped_then_finished(spec_path: Path, root: Path) -> Path:
    """runs/ladder/ under `root`: a scripted ladder stopped after its second rung (that ladder.json kept as
    root/STOPPED), then run again to its end. Returns the ladder's run directory."""
    run = root / "runs" / "ladder"
    scripted_ladder(spec_path, root, LawRungs(stop_at="s"))
    shutil.copy(run / "ladder.json", root / STOPPED)
    scripted_ladder(spec_path, root)
    return run
