"""Early stopping: the configured Optuna pruner and the forgetting guard, asked on every report.

Ray's OptunaSearch creates its study with a NopPruner, so Optuna's pruners would never run;
here the trial itself reports each evaluation into its Optuna trial and asks the study's pruner
(the one component that decides early stopping), and the forgetting guard stops a trial that
is already far over the forgetting budget. A stop becomes PRUNED in the study.
"""

from __future__ import annotations

import optuna
from optuna.pruners import BasePruner

from sweep.record import record_evaluation
from sweep.spec import ForgettingGuard, PrunerConfig
from train_entry.trial_config import Metrics, ProxyConfig


def make_pruner(config: PrunerConfig, *, proxy: ProxyConfig) -> BasePruner:
    """The Optuna pruner named by `config.type`; steps are optimizer steps of the proxy run."""
    if config.type == "median":
        return optuna.pruners.MedianPruner(
            n_startup_trials=config.n_startup_trials,
            n_warmup_steps=config.n_warmup_steps,
            interval_steps=config.interval_steps,
        )
    if config.type == "percentile":
        return optuna.pruners.PercentilePruner(
            config.percentile,
            n_startup_trials=config.n_startup_trials,
            n_warmup_steps=config.n_warmup_steps,
            interval_steps=config.interval_steps,
        )
    # Rungs start at the first evaluation: pruning cannot happen between evaluations anyway.
    if config.type == "successive_halving":
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=proxy.eval_interval, reduction_factor=config.reduction_factor
        )
    if config.type == "hyperband":
        return optuna.pruners.HyperbandPruner(
            min_resource=proxy.eval_interval, max_resource=proxy.steps, reduction_factor=config.reduction_factor
        )
    if config.type == "wilcoxon":
        return optuna.pruners.WilcoxonPruner(n_startup_steps=config.n_warmup_steps // proxy.eval_interval)
    return optuna.pruners.NopPruner()


def guard_reason(guard: ForgettingGuard | None, metrics: Metrics, *, budget: float) -> str | None:
    """Why the forgetting guard stops a trial at this evaluation, or None to let it run."""
    if guard is None or metrics.step < guard.min_steps:
        return None
    if metrics.forgetting > budget + guard.margin:
        return (
            f"forgetting guard: forgetting {metrics.forgetting:.4f} exceeds budget {budget:.4f} "
            f"+ margin {guard.margin:.4f} at step {metrics.step}"
        )
    return None


def pruning_value(metrics: Metrics, *, budget: float, penalty: float) -> float:
    """What the pruner compares across trials: domain_gain, less a penalty for forgetting over budget.

    The optimum is the highest gain among trials within the forgetting budget, so a trial that
    is over it should look worse to the pruner than a feasible one with less gain.
    """
    return metrics.domain_gain - penalty * max(0.0, metrics.forgetting - budget)


class PruningReporter:
    """The report callback's Optuna half: record an evaluation, then ask the pruner and the guard.

    Returns True when the trial should stop; `stop_reason` then says why. The evaluation at the
    final step is recorded but never judged: stopping there saves nothing, and it would throw
    away a trial that ran its whole budget, the only kind the optimum is chosen from.
    """

    def __init__(
        self,
        *,
        trial: optuna.Trial,
        pruner_type: str,
        guard: ForgettingGuard | None,
        budget: float,
        penalty: float,
        final_step: int,
        reported_steps: frozenset[int] = frozenset(),
    ) -> None:
        self._trial = trial
        self._final_step = final_step
        self._pruner_type = pruner_type
        self._guard = guard
        self._budget = budget
        self._penalty = penalty
        # Steps stored by an earlier attempt of this trial (a retry, or a resume after a crash):
        # a trial is a pure function of its config, so they hold the same values.
        self._reported = set(reported_steps)
        self.stop_reason: str | None = None

    def __call__(self, metrics: Metrics) -> bool:
        value = pruning_value(metrics, budget=self._budget, penalty=self._penalty)
        record_evaluation(self._trial, metrics, value=value, new_step=metrics.step not in self._reported)
        self._reported.add(metrics.step)
        if metrics.step >= self._final_step:
            return False
        self.stop_reason = guard_reason(self._guard, metrics, budget=self._budget)
        if self.stop_reason is None and self._trial.should_prune():
            self.stop_reason = (
                f"pruned by the {self._pruner_type} pruner at step {metrics.step} "
                f"(domain_gain {metrics.domain_gain:.4f}, forgetting {metrics.forgetting:.4f})"
            )
        return self.stop_reason is not None
