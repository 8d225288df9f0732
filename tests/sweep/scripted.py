"""Scripted trials and spec variants: sweeps on real Optuna storage with no model, as Optuna tests its pruners."""

from collections.abc import Callable
from pathlib import Path

import numpy as np

from sweep.spec.spec import SweepSpec, load_spec
from sweep.study.record import Status
from sweep.study.row import TrialRow
from sweep.study.trial import Report
from train_entry.mix import MixRatio
from train_entry.text_losses import SideLosses, TextLosses
from train_entry.trial_config import BaseLosses, Figures, Metrics, TrialResult, TrialStatus

DEFAULT_SPEC = Path(__file__).parents[2] / "search_spaces" / "lr_mix.yaml"
STEPS = tuple(range(25, 201, 25))
"""Evaluations of the test spec: every 25 of the default spec's 200 steps."""
BASE = BaseLosses(domain_loss=3.0, general_loss=3.0)
"""The base's losses a scripted trial is measured against, as run_study_trial stores them."""


BUDGET = 0.02
"""The forgetting budget the scripted outcomes of the tests are written against."""
SECTION_OF = {"lr_fraction": "space", "mix": "space", "concurrency": "execution", "storage": "execution"}
"""spec_with's keys that are not the search section's."""


def spec_with(**overrides) -> SweepSpec:
    """The default spec with keys of its space, search or execution sections replaced, evaluating every 25 steps,
    a 0.02 forgetting budget and no replicates or confirmation unless asked."""
    raw = load_spec(DEFAULT_SPEC).model_dump(mode="json")
    if overrides.get("sampler") == "grid" and "num_trials" not in overrides:
        del raw["search"]["num_trials"]  # the grid fills in its own
    raw["search"]["replicates"] = {"top": 0}  # tests/sweep/choice/test_replicates.py turns them on
    raw["search"]["confirmation"] = {"seeds": 0}  # tests/sweep/choice/test_confirmation.py turns it on
    raw["objective"]["forgetting_budget"] = BUDGET
    for key, value in overrides.items():
        raw[SECTION_OF.get(key, "search")][key] = value
    raw["proxy"]["eval_interval"] = STEPS[0]
    return SweepSpec.model_validate(raw)


def scripted(gains, *, forgetting=0.0, diverge_after: int | None = None) -> Callable[[Report], TrialResult]:
    """A stand-in for run_trial that reports the given domain_gain at each evaluation."""

    def run(report: Report) -> TrialResult:
        history = []
        for step, gain in zip(STEPS, gains):
            forget = forgetting(step) if callable(forgetting) else forgetting
            metrics = Metrics(
                step=step,
                tokens_seen=step * 1024,
                domain_loss=BASE.domain_loss * (1 - gain),
                general_loss=BASE.general_loss * (1 + forget),
                domain_gain=gain,
                forgetting=forget,
                train_loss=3.0,
                lr=1e-4,
            )
            history.append(metrics)
            if diverge_after is not None and step >= diverge_after:
                return _result(TrialStatus.DIVERGED, history, reason=f"loss is nan at step {step}")
            if report(metrics):
                return _result(TrialStatus.STOPPED, history, reason="report asked to stop")
        return _result(TrialStatus.COMPLETED, history)

    return run


def _result(status, history, reason=None, *, text: str = "pool") -> TrialResult:
    """The trial's result; unless it diverged, its figures on `text` are its last evaluation's, as if the text were
    the interim windows (`figures_of`)."""
    last = history[-1]
    figures = figures_of(last, text=text) if status is not TrialStatus.DIVERGED else None
    return TrialResult(
        status=status, reason=reason, steps=last.step, tokens_seen=last.tokens_seen, wall_seconds=0.5, history=history,
        figures=figures,
    )  # fmt: skip


def one_document(loss: float) -> SideLosses:
    return SideLosses(losses=[loss], tokens=[128], weights=[1.0])


def figures_of(metrics: Metrics, *, text: str = "pool") -> Figures:
    """Final figures equal to an evaluation's, on one document per side (so no text error)."""
    return Figures(
        text=text, step=metrics.step, domain_loss=metrics.domain_loss, general_loss=metrics.general_loss,
        domain_gain=metrics.domain_gain, forgetting=metrics.forgetting, text_error=None,
        documents=TextLosses(domain=one_document(metrics.domain_loss), general=one_document(metrics.general_loss)),
    )  # fmt: skip


def trial_row(number, lr, mix, gain, forgetting, *, status=Status.COMPLETED, **extra) -> TrialRow:
    """A trial's row as the table reads it from the study, ended at step 200 with the given final metrics, on the
    pool (a confirmation trial's on its round's draw) unless `text` says another."""
    confirms = extra.get("confirms")
    extra.setdefault("text", "pool" if confirms is None else f"draw {confirms + 1}")
    return TrialRow(
        number=number, status=status, reason=None, lr_fraction=lr, peak_lr=lr * 3e-3, mix=mix,
        domain_share=MixRatio.parse(mix).domain_share, domain_gain=gain, forgetting=forgetting, domain_loss=None,
        general_loss=None, best_domain_gain=gain, best_step=200, steps=200, stopped_step=None, tokens_seen=1000,
        wall_seconds=1.0, attempts=1, **extra,
    )  # fmt: skip


def smooth_rows(high: float, mixes, *, forgetting_slope: float, **extra) -> list[TrialRow]:
    """12 completed trials (4 lr_fractions over [0.05, high] x 3 mixes): gain and forgetting rise with the LR and
    the domain share, with a little seeded noise, smooth enough that the surrogate picks between them."""
    rng = np.random.default_rng(1)
    rows = []
    for lr in np.geomspace(0.05, high, 4):
        for mix in mixes:
            share = MixRatio.parse(mix).domain_share
            gain = 0.1 + 0.05 * np.log(lr / 0.05) + 0.1 * share + rng.normal(0, 0.001)
            forgetting = forgetting_slope * lr * share + rng.normal(0, 4e-4)
            rows.append(trial_row(len(rows), float(lr), mix, float(gain), float(forgetting), **extra))
    return rows
