"""The sweep spec: one YAML file mapped one to one onto typed config objects, validated once.

Every error names the spec file, the key path, the bad value and what would be valid, before any
compute starts. Relative paths in the spec are resolved against the spec file's own folder, so a
spec means the same thing from any working directory.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    Field,
    PlainSerializer,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sweep.storage import check_url, quoted
from sweep.yaml_file import YamlFileError, read_yaml
from train_entry.builtin_base import BuiltinBaseConfig
from train_entry.config import Seed, StrictConfig
from train_entry.data.corpus import DEFAULT_MAX_DOCUMENT_BYTES, CorpusFile
from train_entry.mix import Mix
from train_entry.trial_config import ProxyConfig

BUILTIN_BASE = "builtin:tiny-llama"
MAX_TRIALS = 10_000
"""Upper bound of a sweep's trials (and a grid's points): far above any proxy sweep, far below a typo."""
MAX_LISTED = 1_000
"""Upper bound of listed lr_fraction values and mix ratios."""

Config = TypeVar("Config", bound=BaseModel)


class SpecError(ValueError):
    """A spec that cannot be run; the message names the file, key path, value and what is valid."""


def _storage_url(url: str | None) -> str | None:
    return None if url is None else check_url(url)


def _resolve(path: Path, info: ValidationInfo) -> Path:
    root = (info.context or {}).get("root")
    path = path.expanduser()
    if not path.is_absolute() and root is not None:
        path = Path(root) / path
    return path.resolve()


def _corpus_file(path: Path, info: ValidationInfo) -> Path:
    try:
        path = _resolve(path, info)
        if not path.exists():
            raise ValueError(f"corpus file not found: {path}")
        if path.is_dir():
            raise ValueError(f"{path} is a directory; name a corpus file (JSONL or plain text) inside it")
        if not path.is_file():
            raise ValueError(f"{path} is not a regular file (a FIFO, socket or device); name a corpus file")
        if path.stat().st_size == 0:
            raise ValueError(f"corpus file is empty: {path}")
    except (OSError, RuntimeError) as exc:  # a symlink loop, a path too long, a folder we may not read
        raise ValueError(f"cannot read corpus path {path}: {exc}") from None
    return path


CorpusPath = Annotated[Path, AfterValidator(_corpus_file), PlainSerializer(str, return_type=str)]


class BaseConfig(StrictConfig):
    """The pretrained model that continued pretraining starts from."""

    model: str = BUILTIN_BASE
    """`builtin:tiny-llama`, or a Hugging Face causal-LM directory (config.json + weights)."""
    max_lr: float = Field(gt=0.0, le=1.0)
    """The base's own pretraining peak LR; every trial's peak LR is lr_fraction x max_lr."""
    tokenizer: Path | None = None
    """A Hugging Face tokenizer directory; default: the base's own (a BPE for the built-in base)."""
    builtin: BuiltinBaseConfig | None = None
    """Only for builtin:tiny-llama; defaults apply when left out."""

    @field_validator("model")
    @classmethod
    def _model_is_builtin_or_dir(cls, model: str, info: ValidationInfo) -> str:
        if model.startswith("builtin:"):
            if model != BUILTIN_BASE:
                raise ValueError(f"unknown built-in base {model!r}; valid: {BUILTIN_BASE!r}")
            return model
        path = _resolve(Path(model), info)
        if not (path / "config.json").is_file():
            raise ValueError(
                f"{path} is not a Hugging Face model directory (no config.json); "
                f"use {BUILTIN_BASE!r} or a directory written by save_pretrained"
            )
        return str(path)

    @field_validator("tokenizer")
    @classmethod
    def _tokenizer_dir(cls, tokenizer: Path | None, info: ValidationInfo) -> Path | None:
        if tokenizer is None:
            return None
        path = _resolve(tokenizer, info)
        if not path.is_dir():
            raise ValueError(f"tokenizer directory not found: {path}")
        return path

    @model_validator(mode="before")
    @classmethod
    def _builtin_defaults(cls, data: Any) -> Any:
        # Filled in before validation, so the field is set and a dumped spec loads back equal.
        if isinstance(data, dict) and data.get("model", BUILTIN_BASE) == BUILTIN_BASE and data.get("builtin") is None:
            return {**data, "builtin": {}}
        return data

    @model_validator(mode="after")
    def _builtin_only_for_builtin(self) -> BaseConfig:
        if not self.is_builtin and self.builtin is not None:
            raise ValueError(f"base.builtin applies only to model {BUILTIN_BASE!r}; remove it")
        return self

    @property
    def is_builtin(self) -> bool:
        return self.model == BUILTIN_BASE


# --------------------------------------------------------------------------------------- data


class CorpusConfig(StrictConfig):
    """One corpus: JSONL with the text in `text_field` on each line, or plain text (blank-line
    separated); either may be .gz, .bz2 or .xz compressed."""

    train: CorpusPath
    valid: CorpusPath
    """Held out: the fixed validation set every trial of a sweep is measured on."""
    text_field: str = Field("text", min_length=1, max_length=256)
    """The JSONL key holding a document's text ("content" in some code corpora); plain text ignores it."""

    def file(self, split: Literal["train", "valid"]) -> CorpusFile:
        return CorpusFile(getattr(self, split), self.text_field)


class NonEnglishConfig(CorpusConfig):
    share: float = Field(0.10, ge=0.0, lt=1.0)
    """Non-English share of the general side of the mix (10 % in the e-commerce Llama recipe)."""


class DataConfig(StrictConfig):
    domain: CorpusConfig
    general: CorpusConfig
    """The English general-domain replay corpus."""
    non_english: NonEnglishConfig | None = None
    """Non-English general text; its share is split out of the general side of every mix."""
    max_document_bytes: int = Field(DEFAULT_MAX_DOCUMENT_BYTES, gt=0, le=1 << 30)
    """Lines (documents) longer than this are skipped and counted, not fatal; at most 1 GiB."""


# ------------------------------------------------------------------------------------- search


def _fraction(value: float) -> float:
    if not (0.0 < value <= 1.0) or math.isnan(value):
        raise ValueError(f"lr_fraction must be in (0, 1], got {value}")
    return value


LRFraction = Annotated[float, AfterValidator(_fraction)]


class LRFractionRange(StrictConfig):
    low: LRFraction
    high: LRFraction
    log: bool = True
    """Sample on a log scale: LR effects are multiplicative."""

    @model_validator(mode="after")
    def _ordered(self) -> LRFractionRange:
        if self.low > self.high:
            raise ValueError(f"low must not exceed high, got low={self.low}, high={self.high}")
        return self


class MixRange(StrictConfig):
    """A continuous range of mix ratios, searched on the log of general/domain."""

    low: Mix
    high: Mix

    @model_validator(mode="after")
    def _distinct(self) -> MixRange:
        if self.low.log_ratio == self.high.log_ratio:
            raise ValueError(f"low and high are the same ratio ({self.low}); list it instead")
        return self


class PrunerConfig(StrictConfig):
    """The Optuna pruner consulted on every reported evaluation."""

    type: Literal["median", "percentile", "successive_halving", "hyperband", "wilcoxon", "none"] = "median"
    n_startup_trials: int = Field(4, ge=0, le=MAX_TRIALS)
    """Trials that finish before any pruning (median/percentile)."""
    n_warmup_steps: int = Field(0, ge=0, le=1_000_000)
    """Steps within a trial before it may be pruned (median/percentile/wilcoxon)."""
    interval_steps: int = Field(1, ge=1, le=1_000_000)
    percentile: float = Field(50.0, gt=0.0, lt=100.0)
    """For type percentile: prune below this percentile of other trials at the same step."""
    reduction_factor: int = Field(3, ge=2, le=100)
    """For successive_halving and hyperband."""
    infeasible_penalty: float = Field(10.0, ge=0.0, le=1e6)
    """The pruner judges domain_gain - infeasible_penalty x (forgetting - budget) once forgetting
    is over the budget. On raw domain_gain a pruner would stop the low-LR, low-forgetting trials,
    the feasible ones, for gaining less than trials that break the budget; 0 judges raw gain."""


class ForgettingGuard(StrictConfig):
    """Stops a trial whose forgetting already exceeds the budget by a margin."""

    margin: float = Field(0.05, ge=0.0, le=10.0)
    """Absolute forgetting above the budget that stops a trial (0.05 = five points)."""
    min_steps: int = Field(1, ge=1, le=1_000_000)
    """No guard before this step: early evaluations after re-warming are noisy."""


class SearchConfig(StrictConfig):
    """How the sweep searches: space, sampler, pruner, budget."""

    method: Literal["optuna", "grid", "random"] = "optuna"
    lr_fraction: LRFractionRange | Annotated[list[LRFraction], Field(min_length=1, max_length=MAX_LISTED)]
    """A range (optuna, random) or listed values (grid), each value once."""
    mix: Annotated[list[Mix], Field(min_length=1, max_length=MAX_LISTED)] | MixRange
    """Listed "general:domain" ratios (categorical), each ratio once, or a continuous {low, high} log-ratio range."""
    num_trials: int = Field(16, gt=0, le=MAX_TRIALS)
    """Trials the sweep ends with; a grid runs every combination, and fills this in when it is left out."""
    concurrency: int = Field(2, gt=0, le=1024)
    sampler: Literal["tpe", "gp", "random", "nsga2"] = "tpe"
    pruner: PrunerConfig = PrunerConfig()
    forgetting_guard: ForgettingGuard | None = ForgettingGuard()
    seed: Seed = 0
    storage: Annotated[str | None, AfterValidator(_storage_url)] = None
    """SQLAlchemy URL for Optuna's RDB storage; default: a SQLite file in the run directory.
    A password is written `${NAME}` and read from the environment variable NAME."""
    max_retries: int = Field(1, ge=0, le=100)
    """Times a trial that raises is retried before it is recorded FAILED."""

    @model_validator(mode="before")
    @classmethod
    def _grid_counts_its_points(cls, data: Any) -> Any:
        # Filled in before validation, so that a dumped spec (or the plan stored in the study)
        # carries the grid's own count and validates again when it is read back.
        if not isinstance(data, dict) or data.get("method") != "grid" or "num_trials" in data:
            return data
        lr, mix = data.get("lr_fraction"), data.get("mix")
        if isinstance(lr, list) and isinstance(mix, list) and lr and mix:
            return {**data, "num_trials": len(lr) * len(mix)}
        return data

    @field_validator("lr_fraction")
    @classmethod
    def _lr_fractions_distinct(cls, value: Any) -> Any:
        if isinstance(value, list):
            _refuse_repeats(value, key=lambda fraction: fraction)
        return value

    @field_validator("mix")
    @classmethod
    def _mixes_distinct(cls, value: Any) -> Any:
        if isinstance(value, list):
            # 1:1 and 2:2 are one mix: the same domain_share, so the same trial.
            _refuse_repeats(value, key=lambda mix: round(mix.domain_share, 12))
        return value

    @model_validator(mode="after")
    def _grid_is_listed(self) -> SearchConfig:
        if self.method == "grid" and not (isinstance(self.lr_fraction, list) and isinstance(self.mix, list)):
            raise ValueError("method grid needs listed values for both lr_fraction and mix")
        if self.method != "grid" and isinstance(self.lr_fraction, list):
            raise ValueError(f"method {self.method} needs an lr_fraction range {{low, high, log}}")
        if self.method == "grid":
            grid = len(self.lr_fraction) * len(self.mix)
            if self.num_trials != grid:
                # A grid runs every point exactly once; a different count would be silently ignored.
                raise ValueError(
                    f"method grid runs every combination ({grid}), got num_trials={self.num_trials}; remove num_trials"
                )
        return self


def _refuse_repeats(values: list[Any], *, key: Callable[[Any], Any]) -> None:
    seen: dict[Any, int] = {}
    for index, value in enumerate(values):
        first = seen.setdefault(key(value), index)
        if first != index:
            raise ValueError(
                f"items {first} and {index} ({values[first]} and {value}) are the same value: a repeated value "
                "would plan a trial twice and run it once; list each value once"
            )


# ------------------------------------------------------------------------- objective / where


class ObjectiveConfig(StrictConfig):
    forgetting_budget: float = Field(ge=0.0, le=1.0)
    """Largest forgetting accepted (0.02 = general loss may rise 2 % over the base's; 1 = double)."""


class ResourcesConfig(StrictConfig):
    """What one trial gets."""

    cpus: int = Field(1, ge=1, le=1024)
    """Also torch's thread count inside the trial."""
    gpus: float = Field(0, ge=0, le=64)
    """A fraction shares one GPU between trials (0.5: two trials per GPU)."""


class WandbConfig(StrictConfig):
    """Weights & Biases: each trial a W&B run (job_type proxy, grouped by sweep), one run per sweep."""

    mode: Literal["online", "offline", "disabled"] = "online"
    """online logs live when an API key is configured (WANDB_API_KEY or `wandb login`) and falls
    back to offline, with a notice, when none is; offline writes runs under the run directory for
    `wandb sync`; the WANDB_MODE environment variable overrides this."""
    project: str = Field("cpt-sweep", min_length=1, max_length=128)
    entity: str | None = Field(None, min_length=1, max_length=128)
    """W&B user or team; default: the API key's own default entity."""


class TrackingConfig(StrictConfig):
    wandb: WandbConfig | None = None
    """Absent: no W&B at all (nothing imported, nothing written)."""


# -------------------------------------------------------------------------------------- root


class SweepSpec(StrictConfig):
    base: BaseConfig
    data: DataConfig
    proxy: ProxyConfig
    search: SearchConfig
    objective: ObjectiveConfig
    resources: ResourcesConfig = ResourcesConfig()
    tracking: TrackingConfig = TrackingConfig()

    @model_validator(mode="after")
    def _seq_len_fits_builtin(self) -> SweepSpec:
        builtin = self.base.builtin
        if builtin is not None and self.proxy.seq_len > builtin.seq_len:
            raise ValueError(
                f"proxy.seq_len ({self.proxy.seq_len}) exceeds the built-in base's context "
                f"base.builtin.seq_len ({builtin.seq_len})"
            )
        return self


def load_spec(path: str | Path) -> SweepSpec:
    """Reads and validates a spec file; raises SpecError naming the file, key and value."""
    return load_config(path, SweepSpec)


def load_config(path: str | Path, model: type[Config], *, kind: str = "spec") -> Config:
    """Reads a YAML file onto `model` (a spec, or a promotion target or cluster file); raises
    SpecError naming the file, key path and value. Relative paths resolve against the file's folder."""
    path = Path(path)
    try:
        raw = read_yaml(path, kind=kind)
    except YamlFileError as exc:
        raise SpecError(str(exc)) from None
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a {kind} is a mapping with keys {', '.join(model.model_fields)}")
    try:
        return model.model_validate(raw, context={"root": path.resolve().parent})
    except ValidationError as exc:
        raise SpecError(_describe(path, exc, model, kind)) from None


MAX_PROBLEMS_SHOWN = 20
"""A spec with more problems than this is not one fix away: the first ones say what is wrong."""
_SHAPE_ERRORS = {"list_type", "dict_type", "model_type", "model_attributes_type"}


def _describe(path: Path, exc: ValidationError, model: type[BaseModel], kind: str) -> str:
    errors = exc.errors(include_url=False)
    keys = [".".join(str(part) for part in error["loc"] if not _is_union_tag(part)) for error in errors]
    # A union (range or list) reports a shape error for each member it did not match; when a
    # member did match the shape, its own errors are the ones worth reading.
    keep = [
        (key, error)
        for key, error in zip(keys, errors)
        if error["type"] not in _SHAPE_ERRORS or not any(k != key and k.startswith(key) for k in keys)
    ]
    problems = []
    for key, error in keep[:MAX_PROBLEMS_SHOWN]:
        key = key or "(top level)"
        message = error["msg"].removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = f"unknown key; valid keys here: {', '.join(_valid_keys(error['loc'][:-1], model))}"
        elif error["type"] == "missing":
            message = "required key is missing"
        value = error.get("input")
        given = "" if error["type"] == "missing" or isinstance(value, dict) else f" = {quoted(value)}"
        problems.append(f"{key}{given}: {message}")
    if len(problems) == 1:  # one problem, one line
        return f"{path}: {problems[0]}"
    more = [f"... and {len(keep) - MAX_PROBLEMS_SHOWN} more"] if len(keep) > MAX_PROBLEMS_SHOWN else []
    return "\n  ".join([f"{path}: {len(keep)} problem(s) in the {kind}:", *problems, *more])


def _is_union_tag(part: Any) -> bool:
    # pydantic puts the union member it tried into the location ("list[...]", "LRFractionRange").
    return isinstance(part, str) and (part[:1].isupper() or "[" in part)


def _valid_keys(loc: tuple, root: type[BaseModel]) -> list[str]:
    model: Any = root
    for part in loc:
        if _is_union_tag(part):
            continue
        field = model.model_fields.get(part) if isinstance(part, str) else None
        if field is None:
            return []
        model = next(
            (arg for arg in _flatten(field.annotation) if isinstance(arg, type) and issubclass(arg, BaseModel)),
            None,
        )
        if model is None:
            return []
    return list(model.model_fields)


def _flatten(annotation: Any) -> list[Any]:
    args = getattr(annotation, "__args__", None)
    if not args:
        return [annotation]
    return [leaf for arg in args for leaf in _flatten(arg)]
