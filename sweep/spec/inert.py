"""Settings that cannot act: early stopping configured so that it never stops a trial of this spec.

One rule: a setting whose effect the spec's own budget rules out is refused when the spec is read, before any
compute, naming the key, its value and the bound it must be under; a default too (4 startup trials of the median
pruner in a sweep of 4 trials), since the spec would read as if it prunes. A pruner or guard that never acts leaves a sweep silently unpruned (the only
sign was "saved by pruning 0" at its end), while the spec reads as if it prunes.

A trial is judged at each evaluation (every proxy.eval_interval steps) but never at its last (sweep/study/pruning.py):
the last step early stopping can act at is the last evaluation before proxy.steps. The replicates and confirmation
have no such setting: fewer distinct points than `replicates.top` take more seeds each, and confirmation always has a
point to run (the best observed trial's when the surrogate cannot pick).
"""

from __future__ import annotations

from dataclasses import dataclass

from sweep.study.pruning import (
    MedianPrunerConfig,
    NoPrunerConfig,
    SuccessiveHalvingPrunerConfig,
    WilcoxonPrunerConfig,
)
from train_entry.trial_config import ProxyConfig


@dataclass(frozen=True)
class Inert:
    key: str
    """The setting's key path in the spec, e.g. search.pruner.n_warmup_steps."""
    message: str


def last_judged_step(proxy: ProxyConfig) -> int | None:
    """The last step a trial can be stopped at: its last evaluation before the final one; None with one evaluation."""
    last = (proxy.steps - 1) // proxy.eval_interval * proxy.eval_interval
    return last or None


def inert_settings(search, proxy: ProxyConfig) -> list[Inert]:
    """The early-stopping settings of `search` (a SearchConfig) that cannot act on trials of `proxy`."""
    judged = last_judged_step(proxy)
    pruner, guard = search.pruner, search.forgetting_guard
    where = f"proxy.steps {proxy.steps}, evaluated every proxy.eval_interval {proxy.eval_interval} steps"
    if judged is None:
        off = {
            "search.pruner": "search.pruner {type: none}",
            "search.forgetting_guard": "search.forgetting_guard: null",
        }
        active = [key for key, on in zip(off, (not isinstance(pruner, NoPrunerConfig), guard is not None)) if on]
        return [
            Inert(key, f"{key} can never stop a trial: with {where}, a trial's only evaluation is its last, which is "
                       f"never judged; lower proxy.eval_interval below {proxy.steps}, or turn it off ({off[key]})")
            for key in active
        ]  # fmt: skip
    found = []
    warmup = getattr(pruner, "n_warmup_steps", 0)
    if isinstance(pruner, MedianPrunerConfig | WilcoxonPrunerConfig) and warmup > judged:
        found.append(Inert(
            "search.pruner.n_warmup_steps",
            f"search.pruner.n_warmup_steps = {warmup} is beyond step {judged}, the last a trial can be stopped at "
            f"({where}): the pruner would never act; set it to at most {judged}, or search.pruner {{type: none}}",
        ))  # fmt: skip
    if isinstance(pruner, MedianPrunerConfig) and pruner.n_startup_trials >= search.num_trials:
        found.append(Inert(
            "search.pruner.n_startup_trials",
            f"search.pruner.n_startup_trials = {pruner.n_startup_trials} is not below search.num_trials = "
            f"{search.num_trials}: the pruner waits for that many finished trials and would never act; set it below "
            f"{search.num_trials}, or search.pruner {{type: none}}",
        ))  # fmt: skip
    if (
        isinstance(pruner, SuccessiveHalvingPrunerConfig)
        and proxy.eval_interval * pruner.reduction_factor > proxy.steps
    ):
        found.append(Inert(
            "search.pruner.reduction_factor",
            f"search.pruner {pruner.type} with reduction_factor {pruner.reduction_factor} has no second rung within "
            f"proxy.steps {proxy.steps} (its first is at proxy.eval_interval {proxy.eval_interval}): it would never "
            "act; lower proxy.eval_interval or the reduction_factor",
        ))  # fmt: skip
    if guard is not None and guard.min_steps > judged:
        found.append(Inert(
            "search.forgetting_guard.min_steps",
            f"search.forgetting_guard.min_steps = {guard.min_steps} is beyond step {judged}, the last a trial can be "
            f"stopped at ({where}): the guard would never act; set it to at most {judged}, or "
            "search.forgetting_guard: null",
        ))  # fmt: skip
    return found
