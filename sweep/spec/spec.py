"""The sweep spec: one YAML file mapped one to one onto typed config objects, validated once.

Its sections say what a sweep starts from (`base`, `data`, `proxy`), *what* it searches (`space`,
`objective`), *how* it searches (`search`: sampler, pruner, budget) and *where* its trials run
(`execution`: concurrency, resources, storage), and how it is tracked (`tracking`). Every error
names the spec file, the key path, the bad value and what would be valid, before any compute
starts. Relative paths resolve against the spec file's own folder.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BeforeValidator,
    Field,
    PlainSerializer,
    TypeAdapter,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from sweep.files.compat import FORMAT_KEY, SPEC, FormatError
from sweep.files.config_file import SpecError, describe_errors, load_config, read_raw, resolve_path
from sweep.files.storage_url import check_url
from sweep.ladder.config import LadderConfig
from sweep.run.tracking import TrackingConfig
from sweep.space import SearchSpace
from sweep.spec.downstream import EvaluationConfig
from sweep.spec.inert import inert_settings
from sweep.spec.rung_trial import rung_trial
from sweep.spec.shapes import base_shape
from sweep.spec.trial_scale import TrialScale, check_trial_fits
from sweep.study.config import PickConfig, SearchConfig
from sweep.study.sampling import SamplerConfig
from sweep.study.study import SweepPlan
from train_entry.builtin_base import BuiltinBaseConfig
from train_entry.config import StrictConfig
from train_entry.data.corpus import DEFAULT_MAX_DOCUMENT_BYTES, Corpus, CorpusError
from train_entry.data.corpus_formats import format_named
from train_entry.hf_dir import CONFIG_JSON, check_model_dir, refuse_remote_code
from train_entry.trial_config import ProxyConfig

BUILTIN_BASE = "builtin:tiny-llama"
SAMPLER: TypeAdapter[SamplerConfig] = TypeAdapter(SamplerConfig)


def _one_or_many(value: Any) -> Any:
    return [value] if isinstance(value, (str, Path)) else value


def _corpus_format(name: str | None) -> str | None:
    """A registered corpus format's name (train_entry.data.corpus_formats.FORMATS)."""
    if name is not None:
        format_named(name)
    return name


def _corpus_paths(paths: list[Path], info: ValidationInfo) -> list[Path]:
    """Resolved against the spec's folder, each naming a file, a directory or a glob of shards, or a Megatron prefix."""
    try:
        paths = [resolve_path(path, info) for path in paths]
        corpus = Corpus(tuple(paths))
        if corpus.prefixes() is None:
            corpus.shards()
    except CorpusError as exc:
        raise ValueError(str(exc)) from None
    except (OSError, RuntimeError) as exc:  # a symlink loop, a path too long, a folder we may not read
        raise ValueError(f"cannot read corpus path {paths[0]}: {exc}") from None
    return paths


def _paths_out(paths: list[Path]) -> str | list[str]:
    return str(paths[0]) if len(paths) == 1 else [str(path) for path in paths]


CorpusPaths = Annotated[
    list[Path],
    BeforeValidator(_one_or_many),
    Field(min_length=1, max_length=100_000),
    AfterValidator(_corpus_paths),
    PlainSerializer(_paths_out),
]
"""One path or a list: files, directories and globs of shards, or Megatron indexed dataset prefixes."""


def _tokenizer_dir(tokenizer: Path, info: ValidationInfo) -> Path:
    path = resolve_path(tokenizer, info)
    if not path.is_dir():
        raise ValueError(f"tokenizer directory not found: {path}")
    refuse_remote_code(path)
    return path


TokenizerDir = Annotated[Path, AfterValidator(_tokenizer_dir)]
"""A Hugging Face tokenizer directory, resolved against the spec's folder."""


class BaseConfig(StrictConfig):
    """The pretrained model that continued pretraining starts from."""

    model: str = BUILTIN_BASE
    """`builtin:tiny-llama`, or a Hugging Face causal-LM directory (config.json + weights)."""
    max_lr: float = Field(gt=0.0, le=1.0)
    """The base's own pretraining peak LR; every trial's peak LR is lr_fraction x max_lr."""
    tokenizer: TokenizerDir | None = None
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
        path = resolve_path(Path(model), info)
        if not (path / CONFIG_JSON).is_file():
            raise ValueError(
                f"{path} is not a Hugging Face model directory (no {CONFIG_JSON}); "
                f"use {BUILTIN_BASE!r} or a directory written by save_pretrained"
            )
        check_model_dir(path)  # before any compute: a config that is not one, code to run, no weights
        return str(path)

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
    """One corpus: JSONL (the text in `text_field` on each line), plain text (blank-line separated), either
    optionally .gz, .bz2, .xz or .zst compressed, or Parquet (the text in column `text_field`); a file, a
    directory or a glob of such shards, read as one corpus; or Megatron indexed dataset prefixes (.bin/.idx),
    already tokenised by `tokenizer`. docs/corpora.md says how each is read and sampled."""

    train: CorpusPaths
    valid: CorpusPaths
    """Held out: the validation text the trials are measured on, dealt into the pool and the confirmation draws."""
    text_field: str = Field("text", min_length=1, max_length=256)
    """The JSONL key or Parquet column holding a document's text ("content" in some code corpora)."""
    format: Annotated[str | None, AfterValidator(_corpus_format)] = None
    """The format every shard of it is read as (jsonl, text, parquet: train_entry/data/corpus_formats/); default
    none: each shard's name says (docs/corpora.md), so a name that says another thing needs it."""
    tokenizer: TokenizerDir | None = None
    """For Megatron prefixes only: the Hugging Face tokenizer directory that made them; it must be the base's."""
    independent_chunks: int | None = Field(None, ge=16, le=1_000_000)
    """Tokens: cut each validation document into chunks of this many tokens that count as documents of their own
    for the validation texts and their text error (train_entry.data.draws). Only for a corpus whose documents are
    concatenations of unrelated records (a shard per document, a log of independent items): parts of one book or one
    source file move together, and counted apart they make the text error too small. Default none: a document is a
    line (JSONL), a row (Parquet), a blank-line-separated block (text) or a Megatron document."""

    @model_validator(mode="after")
    def _tokenizer_names_prefixes(self) -> CorpusConfig:
        kinds = {split: self.corpus(split).prefixes() is not None for split in ("train", "valid")}
        if self.tokenizer is None and any(kinds.values()):
            split = "train" if kinds["train"] else "valid"
            raise ValueError(
                f"{split} is a Megatron indexed dataset: name the tokenizer that made it (tokenizer: a Hugging Face "
                "tokenizer directory), which must be the base's"
            )
        if self.format is not None and any(kinds.values()):
            raise ValueError(
                f"format applies only to files, and {'train' if kinds['train'] else 'valid'} is a Megatron indexed "
                "dataset (already tokenised); remove it"
            )
        if self.tokenizer is not None and not any(kinds.values()):
            raise ValueError(
                "tokenizer applies only to Megatron prefixes, and neither train nor valid is one; remove it"
            )
        return self

    def corpus(self, split: Literal["train", "valid"]) -> Corpus:
        return Corpus(tuple(getattr(self, split)), self.text_field, self.format)

    @property
    def is_megatron(self) -> bool:
        """Whether its train split is Megatron prefixes (the full run's own data, for the plan's --data-path)."""
        return self.corpus("train").prefixes() is not None


class NonEnglishConfig(CorpusConfig):
    share: float = Field(0.10, ge=0.0, lt=1.0)
    """Non-English share of the general side of the mix (10 % in the e-commerce Llama recipe)."""


class SampleConfig(StrictConfig):
    """The size of each corpus's sample, relative to what the sweep reads of it (sweep.run.sample_size)."""

    margin: float = Field(2.0, ge=1.0, le=1000.0)
    """Multiple of the most tokens one run reads: a trial at the space's largest domain share reads half of its
    sample, so replicates at other seeds and trials at other mixes draw partly other documents."""
    min_tokens: int = Field(4_000_000, ge=1, le=10**13)
    """No sample is smaller: below ~4 M tokens (~14 MB of text, ~7 s of tokenising on 2 cores) sampling saves
    seconds and costs variety, so small corpora, the bundled ones among them, are read whole."""


class DataConfig(StrictConfig):
    domain: CorpusConfig
    general: CorpusConfig
    """The English general-domain replay corpus."""
    non_english: NonEnglishConfig | None = None
    """Non-English general text; its share is split out of the general side of every mix."""
    max_document_bytes: int = Field(DEFAULT_MAX_DOCUMENT_BYTES, gt=0, le=1 << 30)
    """Lines (documents) longer than this are skipped and counted, not fatal; at most 1 GiB."""
    sample: SampleConfig = SampleConfig()
    """How much of each corpus the sweep prepares: a sample spread over it, sized by what the sweep reads."""

    @model_validator(mode="after")
    def _each_file_in_one_split(self) -> DataConfig:
        """A file in two corpus splits is refused: a validation split trained on measures nothing, and one text on
        two sides of the mix makes the ratio mean another thing than it says."""
        owners: dict[tuple[int, int], tuple[str, Path]] = {}
        for name, corpus in self.corpora().items():
            for identity, path in corpus.files().items():
                other, first = owners.setdefault(identity, (name, path))
                if other != name:
                    why = (
                        "validation text must be held out of training, or every trial is measured on text it trained on"
                        if {other.split(".")[1], name.split(".")[1]} == {"train", "valid"}
                        else "each split holds its own text, or the mix ratio means another thing than it says"
                    )
                    same = "" if first == path else f" (the file {first})"
                    raise ValueError(f"{path}{same} is in both data.{other} and data.{name}: {why}")
        return self

    def corpora(self) -> dict[str, Corpus]:
        """Every corpus split by name ("domain.train", "general.valid", ...)."""
        return {
            f"{side}.{split}": getattr(self, side).corpus(split)
            for side in ("domain", "general", "non_english")
            if getattr(self, side) is not None
            for split in ("train", "valid")
        }


# ------------------------------------------------------------------------------- what, how, where


class ObjectiveConfig(StrictConfig):
    forgetting_budget: float = Field(ge=0.0, le=1.0)
    """Largest forgetting accepted (0.02 = general loss may rise 2 % over the base's; 1 = double)."""
    downstream_budget: dict[Annotated[str, Field(min_length=1, max_length=200)], Annotated[float, Field(ge=0.0, le=1.0)]] = (
        Field(default_factory=dict, max_length=64)
    )
    """Per evaluation.downstream task (by its name), the largest drop from the base's score accepted, in the metric's
    units (0.01 = one point of accuracy); a second budget the pick and its confirmation respect with the same chance
    constraint as the forgetting budget. Default none."""
    pick: PickConfig = PickConfig()
    """The rule that picks the recommended point on the surrogate (sweep/choice/pick.py)."""


LARGE_BUDGET = 0.1
"""A forgetting budget from which on a spec (or `sweep law fit --budget`) is warned about: a 10 % rise in general
loss, ten times the reference recipe's ~1 % regression; a budget of 1, general loss allowed to double, was seen given
where 0.01 was meant."""


def forgetting_budget_warning(budget: float, *, key: str) -> str | None:
    """A warning that says the unit of a forgetting budget of LARGE_BUDGET or more, None below it."""
    if budget < LARGE_BUDGET:
        return None
    return (
        f"{key} = {budget:g} lets general loss rise {budget:.0%} over the base's: the budget is a fraction "
        f"(0.01 = general loss may rise 1 %, 1 = general loss may double); did you mean {budget / 100:g}?"
    )


def _storage_url(url: str | None) -> str | None:
    return None if url is None else check_url(url)


class ExecutionConfig(TrialScale):
    """Where and how trials run: how many at once, what each runs on (its cpus, gpus, workers, and how it keeps its
    memory down and its place: sweep/spec/trial_scale.py), where the study is stored."""

    concurrency: int = Field(2, gt=0, le=1024)
    """Trials running at once, at most: on GPUs no more than the Ray cluster's GPUs hold (sweep/run/trial_slots.py)."""
    storage: Annotated[str | None, AfterValidator(_storage_url)] = None
    """SQLAlchemy URL for Optuna's RDB storage; default: a SQLite file in the run directory.
    A password is written `${NAME}` and read from the environment variable NAME."""
    max_retries: int = Field(1, ge=0, le=100)
    """Times a trial that raises is retried before it is recorded FAILED; also the times a sharded trial's worker
    group is restarted after a lost worker, each from the trial's checkpoint."""


# -------------------------------------------------------------------------------------- root


class SweepSpec(StrictConfig):
    base: BaseConfig
    data: DataConfig
    proxy: ProxyConfig
    space: SearchSpace
    objective: ObjectiveConfig
    search: SearchConfig = SearchConfig()
    execution: ExecutionConfig = ExecutionConfig()
    tracking: TrackingConfig = TrackingConfig()
    ladder: LadderConfig | None = None
    """The same design at several matched proxy sizes and the loss law fitted across them (sweep/ladder/); None: one
    sweep of `base`."""
    evaluation: EvaluationConfig = EvaluationConfig()
    """What trials are scored on beside their losses: benchmark tasks (docs/downstream.md)."""

    @model_validator(mode="before")
    @classmethod
    def _sampler_counts_its_trials(cls, data: Any) -> Any:
        # Filled in before validation, so that a dumped spec (or the plan stored in the study)
        # carries the sampler's own count (a grid's points) and validates again when it is read back.
        search, space = (data.get(key) if isinstance(data, dict) else None for key in ("search", "space"))
        if not (isinstance(search, dict) and isinstance(space, dict)) or "num_trials" in search:
            return data
        try:
            count = SAMPLER.validate_python(search.get("sampler", "tpe")).own_trials(SearchSpace.model_validate(space))
        except ValidationError:
            return data  # the same errors come again, with their keys, when the spec is validated
        return data if count is None else {**data, "search": {**search, "num_trials": count}}

    @model_validator(mode="after")
    def _fits(self) -> SweepSpec:
        builtin = self.base.builtin
        if builtin is not None and self.proxy.seq_len > builtin.seq_len:
            raise ValueError(
                f"proxy.seq_len ({self.proxy.seq_len}) exceeds the built-in base's context "
                f"base.builtin.seq_len ({builtin.seq_len})"
            )
        self.search.sampler.check_space(self.space, num_trials=self.search.num_trials)
        self._bpe_has_text()
        if self.ladder is not None and self.ladder.builtin and not self.base.is_builtin:
            raise ValueError(
                f"ladder.rungs are built-in shapes, which take base.builtin's vocabulary, batch and recipe; "
                f"set base.model {BUILTIN_BASE!r} or list Hugging Face rungs {{name, model, max_lr, pretrain_tokens}}"
            )
        if self.ladder is not None and not self.search.sampler.fixed_design:
            # The law is checked by predicting each rung from the others: that needs the same points at every rung.
            raise ValueError(
                f"a ladder runs the same fixed design at every rung: set search.sampler grid (got "
                f"{self.search.sampler.type}) and list space.lr_fraction and space.mix"
            )
        self._trials_fit()
        self._downstream_fits()
        return self

    def _downstream_fits(self) -> None:
        """A downstream budget names tasks the base is scored on; downstream scores need an unsharded trial and one
        base."""
        downstream, budget = self.evaluation.downstream, self.objective.downstream_budget
        if budget:
            names = downstream.task_names if downstream is not None else []
            unknown = sorted(set(budget) - set(names))
            if unknown:
                raise ValueError(
                    f"objective.downstream_budget names {', '.join(unknown)}, not a task of evaluation.downstream "
                    f"(its tasks: {names or 'none'})"
                )
            if not downstream.base:
                raise ValueError(
                    "objective.downstream_budget needs each trial's drop from the base's score: set "
                    "evaluation.downstream.base true"
                )
        if downstream is None:
            return
        if self.execution.sharded:
            raise ValueError(
                "evaluation.downstream scores a trial's model in one process, and execution makes each trial a sharded "
                "job; remove evaluation.downstream or run unsharded trials (execution.workers 1, gpus at most 1)"
            )
        if self.ladder is not None:
            raise ValueError("evaluation.downstream is not taken with a ladder yet: remove one of them")

    def plan(self) -> SweepPlan:
        """What the sweep is asked for (what and how, not where), as its study stores it."""
        return SweepPlan(
            forgetting_budget=self.objective.forgetting_budget,
            max_lr=self.base.max_lr,
            proxy=self.proxy,
            space=self.space,
            search=self.search,
            pick=self.objective.pick,
            downstream_budget=self.objective.downstream_budget,
        )

    def _trials_fit(self) -> None:
        """Before any compute: a trial splits over its workers and fits its GPUs (a ladder's rung by rung)."""
        if self.ladder is None:
            shape = base_shape(self.base.model, self.base.builtin, self.proxy.seq_len)
            check_trial_fits(
                self.execution, self.proxy, shape, base=self.base.model, concurrency=self.execution.concurrency
            )
            return
        for index, (rung, batch) in enumerate(zip(self.ladder.rungs, self.ladder.batch_sizes(self.proxy.batch_size))):
            rung_trial(index, rung, batch, self.execution, self.proxy, self.base.builtin)

    def _bpe_has_text(self) -> None:
        """The built-in base's BPE is trained on the general side's text, which a Megatron prefix does not hold."""
        if not self.base.is_builtin or self.base.tokenizer is not None:
            return
        for side in ("general", "non_english"):
            corpus = getattr(self.data, side)
            if corpus is not None and corpus.is_megatron:
                raise ValueError(
                    f"base {BUILTIN_BASE!r} trains its BPE on data.{side}'s text, and data.{side}.train is Megatron "
                    f"prefixes (token ids); set base.tokenizer to the tokenizer that made them ({corpus.tokenizer})"
                )


def load_spec(path: str | Path) -> SweepSpec:
    """Reads and validates a spec file; raises SpecError naming the file, key and value, also for an early-stopping
    setting that cannot act on its trials (sweep/spec/inert.py), written or left at its default."""
    path = Path(path)
    spec = load_config(path, SweepSpec, raw=spec_content(path))
    inert = inert_settings(spec.search, spec.proxy)
    if inert:
        raise SpecError("\n".join(f"{path}: {setting.message}" for setting in inert))
    return spec


def spec_content(path: Path, *, copy: bool = False) -> Any:
    """The spec file's YAML with its format_version checked and taken out: optional in a spec a person writes,
    required in the copy a run keeps (RUN/spec.yaml). SpecError naming the file otherwise."""
    raw = read_raw(path, kind="spec")
    if not copy and not (isinstance(raw, dict) and FORMAT_KEY in raw):
        return raw
    return _unstamped(path, raw)


def spec_copy_content(path: Path) -> dict[str, Any]:
    """The spec copy a run keeps (RUN/spec.yaml) as written, its format checked and its keys checked as a spec's are:
    a key no spec has, at any level, is a SpecError naming it (the copy is read back from a run directory that may have
    been edited). Its values are each reader's to check with its own model: the corpora and base it names may live on
    another machine than the one that plans or reports, so missing paths are no error here."""
    raw = spec_content(path, copy=True)
    if not isinstance(raw, dict):
        raise SpecError(f"{path}: a spec copy is a mapping with keys {', '.join(SweepSpec.model_fields)}")
    try:
        SweepSpec.model_validate(raw, context={"root": path.resolve().parent})
    except ValidationError as exc:
        unknown = [error for error in exc.errors(include_url=False) if error["type"] == "extra_forbidden"]
        if unknown:
            raise SpecError(describe_errors(path, unknown, SweepSpec, "spec copy")) from None
    return raw


def _unstamped(path: Path, raw: Any) -> Any:
    try:
        return SPEC.unstamped(path, raw)
    except FormatError as exc:
        raise SpecError(str(exc)) from None
