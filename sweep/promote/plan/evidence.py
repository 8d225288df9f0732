"""What a plan's LR rests on: the proxy base its lr_fraction was measured on, and how that fraction reached the target.

The plan's peak LR is lr_fraction x the target's max_lr. The fraction was measured on proxy runs of another, smaller
base, with its own max_lr and tokenizer; it reaches the target either through a ladder's loss law, fitted across proxy
sizes and predicted at the target's N (with its interval there), or unchanged from the proxy, which nothing measured or
fitted at the target's size validates. Both are recorded in the plan (plan.json's `proxy` and `carried` under
`sweep`) and stated in its summary.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import ConfigDict, Field, ValidationError

from sweep.choice.pick import PickSource
from sweep.files.config_file import SpecError
from sweep.files.rundir import RunDir
from sweep.promote.errors import PromotionError
from sweep.promote.point.ladder import finished_ladder
from sweep.promote.point.point import PromotedPoint
from sweep.scale import non_embedding_params
from sweep.spec.shapes import base_shape, hf_shape
from sweep.spec.spec import spec_content
from sweep.target.target import Target
from train_entry.builtin_base import BuiltinBaseConfig
from train_entry.config import StrictConfig
from train_entry.trial_config import TrialConfig


class ProxyBase(StrictConfig):
    """The base the proxy trials continued to pretrain: what the promoted lr_fraction was measured on."""

    model: str = Field(min_length=1)
    """The sweep spec's base.model (builtin:tiny-llama, or the Hugging Face directory), else the trials' base_dir."""
    parameters: int | None = Field(gt=0)
    """Non-embedding parameters, counted as a ladder's law counts N (sweep.scale); None where the base's
    config.json could not be read (a base directory since removed)."""
    tokenizer: str = Field(min_length=1)
    """The tokenizer directory the proxy trials used."""
    max_lr: float = Field(gt=0.0)
    """The proxy base's own pretraining peak LR: the promoted lr_fraction is a fraction of it, measured there."""


class Carried(StrictConfig):
    """How the promoted lr_fraction reached the target's size."""

    by: Literal["law", "unchanged"]
    """law: a ladder's loss law, fitted across proxy sizes, predicted it at the target's N; unchanged: the proxy's
    point applied at the target as it was measured, which nothing at the target's size validates."""
    target_parameters: int = Field(gt=0)
    """The target's non-embedding parameters, counted as the proxy's are."""
    lr_fraction_interval: tuple[float, float] | None = None
    """Of a law: its 90 % interval of lr_fraction at the target (None when its refits gave none)."""


class _SpecBase(StrictConfig):
    """What the evidence reads of a spec copy's base section."""

    model_config = ConfigDict(extra="ignore")

    model: str
    builtin: BuiltinBaseConfig | None = None


def proxy_base(run_dir: Path, trial: TrialConfig) -> ProxyBase:
    """The base of the sweep in `run_dir` (of a ladder, its largest rung, whose trial gave `trial`); PromotionError
    when its spec copy is not one a sweep writes."""
    run = RunDir(run_dir)
    if run.is_ladder:
        run = finished_ladder(run)[1]
    base = _spec_base(run)
    if base is None:
        shape = hf_shape(Path(trial.base_dir), trial.proxy.seq_len)
    else:
        shape = base_shape(base.model, base.builtin, trial.proxy.seq_len)
    return ProxyBase(
        model=trial.base_dir if base is None else base.model,
        parameters=None if shape is None else non_embedding_params(shape),
        tokenizer=trial.tokenizer_dir,
        max_lr=trial.max_lr,
    )


def _spec_base(run: RunDir) -> _SpecBase | None:
    """The base section of the spec copy the sweep ran; None without a spec copy or a base section in it."""
    if not run.spec_copy.is_file():
        return None
    try:
        raw = spec_content(run.spec_copy, copy=True)
        base = raw.get("base") if isinstance(raw, dict) else None
        return None if base is None else _SpecBase.model_validate(base)
    except (SpecError, ValidationError) as error:
        raise PromotionError(f"{run.spec_copy}: its base is not one a sweep writes ({error})") from None


def carried(promoted: PromotedPoint, target: Target) -> Carried:
    """How `promoted`'s lr_fraction reaches `target`: by the ladder's law (with its interval) or unchanged."""
    parameters = non_embedding_params(target.model)
    if promoted.source is not PickSource.LADDER or promoted.ladder is None:
        return Carried(by="unchanged", target_parameters=parameters)
    intervals = promoted.ladder.prediction.intervals
    interval = None if intervals is None else (intervals.lr_fraction.low, intervals.lr_fraction.high)
    return Carried(by="law", target_parameters=parameters, lr_fraction_interval=interval)
