"""Early stopping: one Optuna pruner, the forgetting guard wrapped around the configured one, asked on
every report.

Ray's OptunaSearch creates its study with a NopPruner, so Optuna's pruners would never run; here
the trial itself reports each evaluation into its Optuna trial and asks the study's pruner, the
one component that decides early stopping. It stops a trial predicted to end far over the
forgetting budget (the guard), else whatever the configured pruner stops, and never at the final
evaluation nor a replicate. Both judge forgetting by the end it predicts (sweep.study.forecast), not
by its mid-course value. A stop becomes PRUNED in the study, with the reason.

Each pruner's settings are their own config class, told apart by `type`, so a setting the chosen
pruner does not use is an error that names it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any, Literal

import optuna
from optuna.pruners import BasePruner
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState
from pydantic import Discriminator, Field, Tag

from sweep.study.forecast import ForgettingForecast, forecast_forgetting
from sweep.study.record import Attr
from train_entry.config import StrictConfig
from train_entry.trial_config import Metrics, ProxyConfig

MAX_STEPS = 1_000_000


class _Judging(StrictConfig):
    """What every pruner compares across trials."""

    infeasible_penalty: float = Field(10.0, ge=0.0, le=1e6)
    """The pruner judges domain_gain - infeasible_penalty x (forgetting - budget) once forgetting (the
    forgetting a trial is predicted to end at) is over the budget. On raw domain_gain a pruner would
    stop the low-LR, low-forgetting trials, the feasible ones, for gaining less than trials that
    break the budget; 0 judges raw gain."""


class MedianPrunerConfig(_Judging):
    """Stops a trial below the median of the others at the same step (Optuna's MedianPruner)."""

    type: Literal["median"] = "median"
    n_startup_trials: int = Field(4, ge=0, le=10_000)
    """Trials that finish before any pruning."""
    n_warmup_steps: int = Field(0, ge=0, le=MAX_STEPS)
    """Steps within a trial before it may be pruned."""
    interval_steps: int = Field(1, ge=1, le=MAX_STEPS)

    def build(self, proxy: ProxyConfig) -> BasePruner:
        return optuna.pruners.MedianPruner(
            n_startup_trials=self.n_startup_trials,
            n_warmup_steps=self.n_warmup_steps,
            interval_steps=self.interval_steps,
        )


class PercentilePrunerConfig(MedianPrunerConfig):
    """Stops a trial below a percentile of the others at the same step."""

    type: Literal["percentile"] = "percentile"
    percentile: float = Field(50.0, gt=0.0, lt=100.0)

    def build(self, proxy: ProxyConfig) -> BasePruner:
        return optuna.pruners.PercentilePruner(
            self.percentile,
            n_startup_trials=self.n_startup_trials,
            n_warmup_steps=self.n_warmup_steps,
            interval_steps=self.interval_steps,
        )


class SuccessiveHalvingPrunerConfig(_Judging):
    """Asynchronous successive halving; rungs start at the first evaluation (pruning cannot happen
    between evaluations anyway)."""

    type: Literal["successive_halving"] = "successive_halving"
    reduction_factor: int = Field(3, ge=2, le=100)

    def build(self, proxy: ProxyConfig) -> BasePruner:
        return optuna.pruners.SuccessiveHalvingPruner(
            min_resource=proxy.eval_interval, reduction_factor=self.reduction_factor
        )


class HyperbandPrunerConfig(SuccessiveHalvingPrunerConfig):
    type: Literal["hyperband"] = "hyperband"

    def build(self, proxy: ProxyConfig) -> BasePruner:
        return optuna.pruners.HyperbandPruner(
            min_resource=proxy.eval_interval, max_resource=proxy.steps, reduction_factor=self.reduction_factor
        )


class WilcoxonPrunerConfig(_Judging):
    """Stops a trial whose evaluations are significantly worse than the best trial's (Wilcoxon test)."""

    type: Literal["wilcoxon"] = "wilcoxon"
    n_warmup_steps: int = Field(0, ge=0, le=MAX_STEPS)
    """Steps before the test may stop a trial."""

    def build(self, proxy: ProxyConfig) -> BasePruner:
        return optuna.pruners.WilcoxonPruner(n_startup_steps=self.n_warmup_steps // proxy.eval_interval)


class NoPrunerConfig(_Judging):
    """Never stops a trial early (the forgetting guard still may)."""

    type: Literal["none"] = "none"

    def build(self, proxy: ProxyConfig) -> BasePruner:
        return optuna.pruners.NopPruner()


def _pruner_type(value: Any) -> str | None:
    # `type` may be left out: the median pruner, as Optuna's own default. None (neither a mapping nor a pruner
    # config, e.g. `pruner: median`) is pydantic's own "unable to extract tag" error, not an AttributeError.
    return value.get("type", "median") if isinstance(value, dict) else getattr(value, "type", None)


PrunerConfig = Annotated[
    Annotated[MedianPrunerConfig, Tag("median")]
    | Annotated[PercentilePrunerConfig, Tag("percentile")]
    | Annotated[SuccessiveHalvingPrunerConfig, Tag("successive_halving")]
    | Annotated[HyperbandPrunerConfig, Tag("hyperband")]
    | Annotated[WilcoxonPrunerConfig, Tag("wilcoxon")]
    | Annotated[NoPrunerConfig, Tag("none")],
    Discriminator(_pruner_type),
]
"""The Optuna pruner consulted on every reported evaluation, by `type`."""


class ForgettingGuardConfig(StrictConfig):
    """Stops a trial predicted to end over the forgetting budget by a margin."""

    margin: float = Field(0.05, ge=0.0, le=10.0)
    """Absolute forgetting above the budget that stops a trial (0.05 = five points)."""
    min_steps: int = Field(1, ge=1, le=MAX_STEPS)
    """No guard before this step: early evaluations after re-warming are noisy."""


def pruning_value(metrics: Metrics, forecast: ForgettingForecast, *, budget: float, penalty: float) -> float:
    """What the pruner compares across trials: domain_gain, less a penalty for the forgetting it is
    predicted to end at over budget.

    The best observed trial is the highest gain among trials within the forgetting budget, so a trial that
    will end over it should look worse to the pruner than a feasible one with less gain; one over
    the budget only mid-course (general loss peaks there and falls as the LR decays) should not.
    """
    return metrics.domain_gain - penalty * max(0.0, forecast.predicted - budget)


def stored_forecast(trial: FrozenTrial, last: Metrics) -> ForgettingForecast:
    """The forecast stored with the trial's latest evaluation; the raw value for a trial stored without one."""
    stored = trial.user_attrs.get(Attr.FORECAST.value)
    if stored is not None and stored["step"] == last.step:
        return ForgettingForecast.model_validate(stored)
    return ForgettingForecast(
        step=last.step, now=last.forgetting, predicted=last.forgetting, trials=0, raw_because="no forecast stored"
    )


class GuardedPruner(BasePruner):
    """The study's pruner: the forgetting guard, then the configured pruner; never the final evaluation.

    `stop_reason` says why a trial stops (None: it runs on); `prune` is Optuna's view of the same
    decision, so optuna-dashboard and Optuna's own should_prune agree with the sweep.
    """

    def __init__(
        self, config: PrunerConfig, *, guard: ForgettingGuardConfig | None, budget: float, proxy: ProxyConfig
    ) -> None:
        self._name = config.type
        self._inner = config.build(proxy)
        self._guard = guard
        self._budget = budget
        self._final_step = proxy.steps

    def prune(self, study: Study, trial: FrozenTrial) -> bool:
        return self.stop_reason(study, trial) is not None

    def stop_reason(self, study: Study, trial: FrozenTrial) -> str | None:
        step = trial.last_step
        if step is None or step >= self._final_step or Attr.LAST.value not in trial.user_attrs:
            return None  # stopping at the end saves nothing, and would discard a trial that ran its budget
        if Attr.REPLICATE_OF.value in trial.user_attrs or Attr.CONFIRMS.value in trial.user_attrs:
            # A replicate or a confirmation re-measures a point at its final step: stopped, it measures nothing.
            return None
        last = Metrics.model_validate(trial.user_attrs[Attr.LAST.value])
        forecast = stored_forecast(trial, last)
        guard = self._guard
        if guard is not None and step >= guard.min_steps and forecast.predicted > self._budget + guard.margin:
            return (
                f"forgetting guard at step {step}: {forecast.describe()}, over budget {self._budget:.4g} "
                f"+ margin {guard.margin:.4g}"
            )
        if self._inner.prune(study, trial):
            return (
                f"pruned by the {self._name} pruner at step {step} "
                f"(domain_gain {last.domain_gain:.4f}, {forecast.describe()})"
            )
        return None


class PruningReporter:
    """The report callback's Optuna half: record an evaluation, then ask the study's pruner.

    Returns True when the trial should stop; `stop_reason` then says why.
    """

    def __init__(
        self,
        *,
        trial: optuna.Trial,
        frozen: Callable[[], FrozenTrial],
        pruner: GuardedPruner,
        budget: float,
        penalty: float,
        reported_steps: frozenset[int] = frozenset(),
    ) -> None:
        self._trial = trial
        self._frozen = frozen
        self._pruner = pruner
        self._budget = budget
        self._penalty = penalty
        # Steps stored by an earlier attempt of this trial (a retry, or a resume after a crash):
        # a trial is a pure function of its config, so they hold the same values.
        self._reported = set(reported_steps)
        self.stop_reason: str | None = None

    def __call__(self, metrics: Metrics) -> bool:
        completed = self._trial.study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
        forecast = forecast_forgetting(completed, step=metrics.step, now=metrics.forgetting)
        value = pruning_value(metrics, forecast, budget=self._budget, penalty=self._penalty)
        new_step = metrics.step not in self._reported
        record_evaluation(self._trial, metrics, value=value, forecast=forecast, new_step=new_step)
        self._reported.add(metrics.step)
        self.stop_reason = self._pruner.stop_reason(self._trial.study, self._frozen())
        return self.stop_reason is not None


def record_evaluation(
    trial: optuna.Trial, metrics: Metrics, *, value: float, forecast: ForgettingForecast, new_step: bool
) -> None:
    """Stores one evaluation: `value` (what the pruner judges) as the intermediate value, the metrics and
    the forecast of its forgetting as attrs.

    `new_step` is False when an earlier attempt already reported this step: Optuna keeps the
    first value of a step, and a rerun of the same config measures the same metrics anyway (its
    forecast may draw on more completed trials; the latest is the one stored).
    """
    if new_step:
        trial.report(value, step=metrics.step)
    evaluation = metrics.model_dump(mode="json")
    # A retry re-reports from its first step: its evaluations replace the earlier attempt's.
    earlier = [e for e in trial.user_attrs.get(Attr.HISTORY.value, []) if e["step"] < metrics.step]
    trial.set_user_attr(Attr.HISTORY.value, [*earlier, evaluation])
    trial.set_user_attr(Attr.LAST.value, evaluation)
    trial.set_user_attr(Attr.FORECAST.value, forecast.model_dump(mode="json"))
