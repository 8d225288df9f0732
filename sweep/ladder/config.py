"""The proxy ladder (the spec's `ladder:` section): the same search at several proxy sizes, smallest to largest.

A rung is a built-in base shape (a preset name, `xs`, `s`, `m`, or a shape of its own) pretrained on a token
budget proportional to its parameter count, or a Hugging Face base directory of one model family with its own
max_lr. How each rung's pick moves with its parameter count N is fitted and extrapolated to a target's N
(sweep.ladder.fit); N is counted without the embedding, the same way for proxies and targets (sweep.scale).
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from sweep.choice.pick import ratio_of
from sweep.choice.surrogate import Box
from sweep.files.config_file import resolve_path
from sweep.files.records import CorruptFile, read_model
from sweep.scale import non_embedding_params
from sweep.spec.space import LRFraction, SearchSpace
from sweep.spec.trial_memory import MAX_WORKERS
from train_entry.config import StrictConfig, shown
from train_entry.megatron.config import ModelShape
from train_entry.mix import Mix

MIN_RUNGS = 3
"""A line through the rungs' picks with one degree of freedom left to judge it by; two would fit any two points."""
MAX_RUNGS = 8
"""Each rung is a whole sweep: eight is far beyond a day's ladder, far below a typo."""
RungName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")]
"""A rung's name names its run directory (runs/<ladder>/rungs/<name>/) and its study."""

DEFAULT_BUILTIN_PRETRAIN_TOKENS = 1200 * 16 * 128
"""What today's default builtin:tiny-llama (the `m` preset) pretrains on: 1200 steps x 16 x 128 tokens."""


class BuiltinRung(StrictConfig):
    """A built-in base shape; vocabulary, context, batch, max_lr and recipe are base.builtin's and base.max_lr."""

    name: RungName
    hidden_size: int = Field(ge=16, le=16_384)
    num_layers: int = Field(ge=1, le=256)
    num_heads: int = Field(ge=1, le=256)
    num_kv_heads: int = Field(ge=1, le=256)
    intermediate_size: int = Field(ge=16, le=65_536)
    """SwiGLU width, 2.75 x hidden in the presets as in builtin:tiny-llama."""

    @model_validator(mode="after")
    def _shape_fits(self) -> BuiltinRung:
        if self.hidden_size % self.num_heads or self.num_heads % self.num_kv_heads:
            raise ValueError(
                f"num_heads must divide hidden_size and num_kv_heads num_heads, got {self.hidden_size=}, "
                f"{self.num_heads=}, {self.num_kv_heads=}"
            )
        return self

    @property
    def parameters(self) -> int:
        return non_embedding_params(self.shape(vocab_size=1, seq_len=1))

    def shape(self, *, vocab_size: int, seq_len: int) -> ModelShape:
        return ModelShape(
            num_layers=self.num_layers,
            hidden_size=self.hidden_size,
            ffn_hidden_size=self.intermediate_size,
            num_attention_heads=self.num_heads,
            num_query_groups=self.num_kv_heads,
            vocab_size=vocab_size,
            seq_length=seq_len,
        )


PRESETS: dict[str, BuiltinRung] = {
    rung.name: rung
    for rung in (
        # A head dimension of 32 throughout; width and depth grow together, ~3 x N per step.
        BuiltinRung(name="xs", hidden_size=64, num_layers=2, num_heads=2, num_kv_heads=1, intermediate_size=176),
        BuiltinRung(name="s", hidden_size=96, num_layers=3, num_heads=3, num_kv_heads=1, intermediate_size=264),
        # Exactly today's default builtin:tiny-llama.
        BuiltinRung(name="m", hidden_size=128, num_layers=4, num_heads=4, num_kv_heads=2, intermediate_size=352),
    )
}
"""Built-in presets by name: N (non-embedding) 92 480, 302 496 and 738 432."""

DEFAULT_PRETRAIN_TOKENS_PER_PARAMETER = DEFAULT_BUILTIN_PRETRAIN_TOKENS / PRESETS["m"].parameters
"""3.33 pretraining tokens per non-embedding parameter: the `m` preset's, so it pretrains exactly as
builtin:tiny-llama does (1200 steps), `s` for 492 steps and `xs` for 150."""


class HfModelConfig(BaseModel):
    """The part of a Hugging Face config.json that gives a Llama-family model's N (its other keys ignored)."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    model_type: str = ""
    hidden_size: int = Field(gt=0)
    num_hidden_layers: int = Field(gt=0)
    num_attention_heads: int = Field(gt=0)
    num_key_value_heads: int | None = Field(None, gt=0)
    intermediate_size: int = Field(gt=0)

    def model_shape(self, *, vocab_size: int, seq_len: int, untied: bool) -> ModelShape:
        return ModelShape(
            num_layers=self.num_hidden_layers,
            hidden_size=self.hidden_size,
            ffn_hidden_size=self.intermediate_size,
            num_attention_heads=self.num_attention_heads,
            num_query_groups=self.num_key_value_heads or self.num_attention_heads,
            vocab_size=vocab_size,
            seq_length=seq_len,
            untie_embeddings_and_output_weights=untied,
        )


class HfRung(StrictConfig):
    """A Hugging Face causal-LM base directory; every rung of a ladder of them comes from one model family."""

    name: RungName
    model: Path
    max_lr: float = Field(gt=0.0, le=1.0)
    """This base's own pretraining peak LR: its trials' peak LR is lr_fraction x this."""
    tokenizer: Path | None = None
    """Default: the base's own."""
    gpus: int | None = Field(None, ge=1, le=MAX_WORKERS)
    """GPUs per trial at this rung, trials on GPUs (sweep/ladder/gpus.py); left out, execution.gpus when they hold
    its trial, else the fewest that do."""

    @field_validator("model")
    @classmethod
    def _model_dir(cls, model: Path, info: ValidationInfo) -> Path:
        path = resolve_path(model, info)
        if not (path / "config.json").is_file():
            raise ValueError(f"{path} is not a Hugging Face model directory (no config.json)")
        return path

    @property
    def config(self) -> HfModelConfig:
        try:
            return read_model(self.model / "config.json", HfModelConfig, what="Hugging Face config", max_bytes=1 << 20)
        except CorruptFile as exc:
            raise ValueError(str(exc)) from None

    @property
    def parameters(self) -> int:
        return non_embedding_params(self.config.model_shape(vocab_size=1, seq_len=1, untied=True))


def _preset(value: Any) -> Any:
    if isinstance(value, str):
        if value not in PRESETS:
            raise ValueError(f"unknown built-in preset {shown(value)}; valid: {', '.join(PRESETS)}, or a mapping")
        return PRESETS[value].model_dump()
    return value


Rung = Annotated[BuiltinRung | HfRung, BeforeValidator(_preset)]
"""A preset name (`xs`, `s`, `m`), a built-in shape {name, hidden_size, ...}, or {name, model, max_lr}."""


class ReferencePoint(StrictConfig):
    """The fixed point at which every rung's surrogate gives domain_gain and forgetting, to fit how they move."""

    lr_fraction: LRFraction
    mix: Mix

    def check_inside(self, space: SearchSpace) -> None:
        """ValueError naming the key and the searched range unless the point lies in the space's box: the rungs'
        surrogates are fitted over that box, and outside it they only extrapolate."""
        box = Box.of(space)
        slack = 1e-9  # a bound written back from its log is off in the last digit
        problems = []
        lr_low, lr_high = box.log_lr
        if not lr_low - slack <= math.log(self.lr_fraction) <= lr_high + slack:
            problems.append(
                f"ladder.reference.lr_fraction = {self.lr_fraction:g} lies outside the searched space.lr_fraction, "
                f"{math.exp(lr_low):g} to {math.exp(lr_high):g}"
            )
        mix_low, mix_high = box.log_ratio
        if not mix_low - slack <= self.mix.log_ratio <= mix_high + slack:
            problems.append(
                f"ladder.reference.mix = '{self.mix}' lies outside the searched space.mix, {ratio_of(mix_high)} to "
                f"{ratio_of(mix_low)} (general:domain)"
            )
        if problems:
            raise ValueError("; ".join(problems))


class LadderConfig(StrictConfig):
    """Rungs smallest to largest; the same space, objective, search and execution run at each."""

    rungs: list[Rung] = Field(min_length=MIN_RUNGS, max_length=MAX_RUNGS)
    target: str = Field("llama3.1-70b", min_length=1, max_length=1000)
    """The promotion target (a preset name, or a target YAML file relative to the spec's folder) the report's
    extrapolation band reaches to; `sweep promote` extrapolates to its own --target."""
    reference: ReferencePoint | None = None
    """Where gain and forgetting are compared across rungs; default the centre of the space (log scales)."""
    pretrain_tokens_per_parameter: float = Field(DEFAULT_PRETRAIN_TOKENS_PER_PARAMETER, gt=0.0, le=10_000.0)
    """Built-in rungs pretrain on this many tokens per non-embedding parameter (default 3.33: the `m` preset,
    today's builtin:tiny-llama, pretrains for its 1200 steps)."""

    @field_validator("target")
    @classmethod
    def _target_file(cls, target: str, info: ValidationInfo) -> str:
        # A file, like every path in a spec, means the same from any working directory; a preset name has neither
        # a YAML suffix nor a folder in it.
        if Path(target).suffix in (".yaml", ".yml") or "/" in target:
            return str(resolve_path(Path(target), info))
        return target

    @model_validator(mode="after")
    def _ordered(self) -> LadderConfig:
        names = [rung.name for rung in self.rungs]
        if len(set(names)) < len(names):
            raise ValueError(f"rung names must differ, got {names}")
        if len({type(rung) for rung in self.rungs}) > 1:
            raise ValueError("rungs are all built-in shapes or all Hugging Face directories, not both")
        sizes = [rung.parameters for rung in self.rungs]
        if any(small >= large for small, large in itertools.pairwise(sizes)):
            shown_sizes = ", ".join(f"{name} {size:,}" for name, size in zip(names, sizes))
            raise ValueError(f"rungs must grow, smallest first; non-embedding parameters: {shown_sizes}")
        return self

    @property
    def builtin(self) -> bool:
        return isinstance(self.rungs[0], BuiltinRung)
