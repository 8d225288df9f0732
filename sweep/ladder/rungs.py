"""Each rung of a ladder as a sweep spec of its own: the ladder's spec with the rung's base and a proxy budget
scaled to the rung's parameter count, and the search space's bounds and points that the fits read and write.

Trial tokens scale with N (D proportional to N) at the ratio of the largest rung, which runs the spec's own
proxy: a smaller rung takes proportionally fewer steps (never fewer than MIN_RUNG_STEPS), is evaluated as
often per run, and its pruner's and guard's step settings shrink with its steps.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from sweep.choice.surrogate import Box
from sweep.ladder.config import BuiltinRung, HfRung, LadderConfig
from sweep.ladder.gpus import rung_execution_gpus
from sweep.spec.space import LRFractionRange, MixRange, Param, SearchSpace
from sweep.spec.spec import BUILTIN_BASE, SweepSpec

MIN_RUNG_STEPS = 20
"""A rung's trials take at least this many optimizer steps: a few evaluations and a warmup even for the smallest."""
SCALED_STEP_KEYS = ("n_warmup_steps", "interval_steps", "min_steps")
"""Step settings of the pruner and the forgetting guard, shrunk with a rung's steps."""


@dataclass(frozen=True)
class RungSpec:
    name: str
    parameters: int
    """Non-embedding parameters (sweep.scale.non_embedding_params)."""
    spec: SweepSpec
    """The rung's own sweep: no ladder section, so it loads and runs as any spec does."""

    @property
    def trial_tokens(self) -> int:
        proxy = self.spec.proxy
        return proxy.steps * proxy.batch_size * proxy.seq_len


def rung_specs(spec: SweepSpec) -> list[RungSpec]:
    """The ladder's rungs, smallest first, each with its sweep spec."""
    ladder = spec.ladder
    if ladder is None:
        raise ValueError("the spec has no ladder section")
    largest = ladder.rungs[-1].parameters
    return [_rung_spec(spec, ladder, index, rung.parameters / largest) for index, rung in enumerate(ladder.rungs)]


def _rung_spec(spec: SweepSpec, ladder: LadderConfig, index: int, factor: float) -> RungSpec:
    rung = ladder.rungs[index]
    raw = spec.model_dump(mode="json")
    raw["ladder"] = None
    raw["base"] = _base(spec, ladder, rung)
    proxy = spec.proxy
    steps = proxy.steps if factor == 1.0 else max(MIN_RUNG_STEPS, round(proxy.steps * factor))
    shrink = steps / proxy.steps
    evaluations = max(1, proxy.steps // proxy.eval_interval)
    eval_interval = max(1, steps // evaluations)
    raw["proxy"] |= {
        "steps": steps,
        "eval_interval": eval_interval,
        "warmup_steps": min(round(proxy.warmup_steps * shrink), steps - 1),
    }
    execution = spec.execution
    # GPUs per trial rung by rung (one worker per GPU), and checkpoints after as many evaluations as the spec's.
    raw["execution"]["gpus"] = rung_execution_gpus(index, rung, execution, proxy, spec.base.builtin)
    if raw["execution"]["gpus"] > 0:
        raw["execution"]["workers"] = None
    if execution.checkpoint_interval is not None:
        raw["execution"]["checkpoint_interval"] = execution.checkpoint_interval // proxy.eval_interval * eval_interval
    for section in ("pruner", "forgetting_guard"):
        settings = raw["search"].get(section)
        for key in SCALED_STEP_KEYS:
            if isinstance(settings, dict) and key in settings:
                settings[key] = max(1 if key != "n_warmup_steps" else 0, round(settings[key] * shrink))
    return RungSpec(name=rung.name, parameters=rung.parameters, spec=SweepSpec.model_validate(raw))


def _base(spec: SweepSpec, ladder: LadderConfig, rung: BuiltinRung | HfRung) -> dict[str, Any]:
    if isinstance(rung, HfRung):
        tokenizer = None if rung.tokenizer is None else str(rung.tokenizer)
        return {"model": str(rung.model), "max_lr": rung.max_lr, "tokenizer": tokenizer, "builtin": None}
    template = spec.base.builtin
    tokens_per_step = template.batch_size * template.seq_len
    pretrain_steps = max(2, round(ladder.pretrain_tokens_per_parameter * rung.parameters / tokens_per_step))
    warmup = min(round(template.warmup_steps * pretrain_steps / template.pretrain_steps), pretrain_steps - 1)
    shape = rung.model_dump(exclude={"name"})
    return {
        "model": BUILTIN_BASE,
        "max_lr": spec.base.max_lr,
        "tokenizer": None if spec.base.tokenizer is None else str(spec.base.tokenizer),
        "builtin": template.model_dump() | shape | {"pretrain_steps": pretrain_steps, "warmup_steps": warmup},
    }


# ------------------------------------------------------------------------------------ points in the space


def centre(space: SearchSpace) -> tuple[float, float]:
    """(lr_fraction, log mix ratio) at the middle of both log axes of the space: the default reference point."""
    box = Box.of(space)
    return math.exp(sum(box.log_lr) / 2), sum(box.log_ratio) / 2


def space_params(space: SearchSpace, lr_fraction: float, log_mix: float) -> dict[str, Any]:
    """The trial params nearest to (lr_fraction, log mix ratio) inside the space: clipped to a range, the nearest
    listed value (in log) otherwise. What a predicted point is enqueued as."""
    lr = space.lr_fraction
    if isinstance(lr, LRFractionRange):
        lr_value = min(max(lr_fraction, lr.low), lr.high)
    else:
        lr_value = min(lr, key=lambda value: abs(math.log(value) - math.log(lr_fraction)))
    if isinstance(space.mix, MixRange):
        low, high = sorted((space.mix.low.log_ratio, space.mix.high.log_ratio))
        return {Param.LR_FRACTION.value: lr_value, Param.MIX_LOG_RATIO.value: min(max(log_mix, low), high)}
    mix = min(space.mix, key=lambda ratio: abs(ratio.log_ratio - log_mix))
    return {Param.LR_FRACTION.value: lr_value, Param.MIX.value: str(mix)}
