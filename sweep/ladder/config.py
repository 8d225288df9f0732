"""The proxy ladder (the spec's `ladder:` section): the same fixed design at several proxy sizes, smallest to largest,
whose dimensionless ratios match each other and the target's (sweep.ladder.rungs), and the continued-pretraining
loss law fitted over every evaluation of every trial of every rung (sweep.ladder).

A rung is a built-in base shape (a preset name, `xxs`, `xs`, `s`, `m`, or a shape of its own), pretrained for the
ladder at its own peak LR, or a Hugging Face base directory of one model family with its own max_lr and pretraining
tokens. N is counted without the embedding, the same way for proxies and targets (sweep.scale).
"""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, ValidationInfo, field_validator, model_validator

from sweep.files.config_file import resolve_path
from sweep.files.records import CorruptFile, read_model
from sweep.law.config import LawSettings
from sweep.law.csv import read_runs_csv
from sweep.law.table import LawInputError
from sweep.scale import non_embedding_params
from sweep.spec.shapes import HfModelConfig, builtin_shape
from sweep.spec.trial_memory import MAX_WORKERS
from sweep.target.full_run import MOST_TOKENS, TOKENS
from train_entry.config import StrictConfig, shown

MIN_RUNGS = 4
"""Leave-one-rung-out predicts the largest rung from three others, which span two size ratios to fit N's
exponent by and one to check it against."""
MAX_RUNGS = 8
"""Each rung is a whole sweep: eight is far beyond a day's ladder, far below a typo."""
MIN_SPAN = 10.0
"""The largest rung's N over the smallest's: a decade at least, or N's exponent is fitted over noise."""
RungName = Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]{0,39}$")]
"""A rung's name names its run directory (runs/<ladder>/rungs/<name>/) and its study."""


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
        return non_embedding_params(builtin_shape(self, vocab_size=1, seq_len=1))


PRESETS: dict[str, BuiltinRung] = {
    rung.name: rung
    for rung in (
        # A head dimension of 32 throughout; xxs to xs doubles the depth, then width and depth grow together.
        BuiltinRung(name="xxs", hidden_size=64, num_layers=1, num_heads=2, num_kv_heads=1, intermediate_size=176),
        BuiltinRung(name="xs", hidden_size=64, num_layers=2, num_heads=2, num_kv_heads=1, intermediate_size=176),
        BuiltinRung(name="s", hidden_size=96, num_layers=3, num_heads=3, num_kv_heads=1, intermediate_size=264),
        # Exactly today's default builtin:tiny-llama.
        BuiltinRung(name="m", hidden_size=128, num_layers=4, num_heads=4, num_kv_heads=2, intermediate_size=352),
    )
}
"""Built-in presets by name: N (non-embedding) 46 272, 92 480, 302 496 and 738 432."""


class HfRung(StrictConfig):
    """A Hugging Face causal-LM base directory; every rung of a ladder of them comes from one model family."""

    name: RungName
    model: Path
    max_lr: float = Field(gt=0.0, le=1.0)
    """This base's own pretraining peak LR: its trials' peak LR is lr_fraction x this."""
    pretrain_tokens: float = Field(gt=0.0, le=1e15)
    """The tokens this base was pretrained on: the law counts its trials' LR area in them."""
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
            return read_model(
                self.model / "config.json", HfModelConfig, fmt=None, what="Hugging Face config", max_bytes=1 << 20
            )
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
"""A preset name (`xxs`, `xs`, `s`, `m`), a built-in shape {name, hidden_size, ...}, or {name, model, max_lr,
pretrain_tokens}."""


class LadderConfig(StrictConfig):
    """Rungs smallest to largest; the same space, objective, search and execution run at each, and the rungs'
    trials continue-pretrain on the target's share of their own pretraining tokens (docs/ladder.md)."""

    rungs: list[Rung] = Field(min_length=MIN_RUNGS, max_length=MAX_RUNGS)
    target: str = Field("llama3.1-70b", min_length=1, max_length=1000)
    """The promotion target (a preset name, or a target YAML file relative to the spec's folder): its pretraining
    tokens set the rungs' share, and the law's optimum is predicted at its N. `sweep promote` predicts at its own
    --target from the same law."""
    full_run_tokens: int = Field(TOKENS, gt=0, le=MOST_TOKENS)
    """The full run's continued-pretraining tokens (default the reference recipe's 1 T): over the target's
    pretraining tokens, the share of its own pretraining every rung's trials continue-pretrain on."""
    runs: Path | None = None
    """A CSV of a team's earlier runs (`sweep law fit`'s columns, docs/ladder.md), relative to the spec's folder:
    their evaluations enter the law at their own N beside the rungs'."""
    law: LawSettings = LawSettings()
    """How the law is fitted and how many bootstrap refits give its intervals."""

    @field_validator("target")
    @classmethod
    def _target_file(cls, target: str, info: ValidationInfo) -> str:
        # A file, like every path in a spec, means the same from any working directory; a preset name has neither
        # a YAML suffix nor a folder in it.
        if Path(target).suffix in (".yaml", ".yml") or "/" in target:
            return str(resolve_path(Path(target), info))
        return target

    @field_validator("runs")
    @classmethod
    def _runs_file(cls, runs: Path | None, info: ValidationInfo) -> Path | None:
        if runs is None:
            return None
        path = resolve_path(runs, info)
        try:
            read_runs_csv(path)  # validated once, with the spec: a bad row is said before any rung trains
        except LawInputError as exc:
            raise ValueError(str(exc)) from None
        return path

    @model_validator(mode="after")
    def _ordered(self) -> LadderConfig:
        names = [rung.name for rung in self.rungs]
        if len(set(names)) < len(names):
            raise ValueError(f"rung names must differ, got {names}")
        if len({type(rung) for rung in self.rungs}) > 1:
            raise ValueError("rungs are all built-in shapes or all Hugging Face directories, not both")
        sizes = [rung.parameters for rung in self.rungs]
        shown_sizes = ", ".join(f"{name} {size:,}" for name, size in zip(names, sizes))
        if any(small >= large for small, large in itertools.pairwise(sizes)):
            raise ValueError(f"rungs must grow, smallest first; non-embedding parameters: {shown_sizes}")
        if sizes[-1] < MIN_SPAN * sizes[0]:
            raise ValueError(
                f"rungs must span at least a decade of N (the largest {MIN_SPAN:g} x the smallest), got "
                f"{sizes[-1] / sizes[0]:.2f} x: {shown_sizes}"
            )
        self._runs_are_other_rungs(names)
        return self

    def _runs_are_other_rungs(self, names: list[str]) -> None:
        if self.runs is None:
            return
        shared = sorted(set(read_runs_csv(self.runs).rungs) & set(names))
        if shared:
            raise ValueError(
                f"ladder.runs {self.runs} names rung(s) {', '.join(shared)} of the ladder itself; name earlier runs' "
                "models otherwise"
            )

    @property
    def builtin(self) -> bool:
        return isinstance(self.rungs[0], BuiltinRung)

    def batch_sizes(self, batch_size: int) -> list[int]:
        """Each rung's trial batch before it is split over its workers: in proportion to N, the largest rung's
        being the proxy's `batch_size`, so that every rung runs the same steps (docs/ladder.md, "Matched rungs")."""
        largest = self.rungs[-1].parameters
        return [
            batch_size if rung is self.rungs[-1] else max(1, round(batch_size * rung.parameters / largest))
            for rung in self.rungs
        ]
