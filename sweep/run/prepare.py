"""Everything a sweep's trials share, built once before any trial starts.

The tokenizer, the indexed corpora, the validation texts (the pool and one draw per confirmation round,
train_entry.data.draws), the base (pretrained here if it is the built-in one) and the base's own losses on each
text, document by document. Each is cached by content under the cache root,
so a second sweep over the same data and base starts at once.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from sweep.files.records import CorruptFile, read_model
from sweep.run.progress import sample_progress, step_progress
from sweep.run.sample_size import confirmation_draws, sample_tokens, validation_weights
from sweep.run.shipped_base import shipped_base
from sweep.spec.spec import BaseConfig, CorpusConfig, DataConfig, SweepSpec
from train_entry.base_cache import ensure_builtin_base
from train_entry.builtin_base import MANIFEST, SHIPPED_DIR
from train_entry.data.cache import digest
from train_entry.data.corpus import Corpus, CorpusError, CorpusStats
from train_entry.data.draws import TextSide, check_texts, split_texts, text_lengths, text_name
from train_entry.data.fingerprint import prefix_fingerprint
from train_entry.data.indexed import IndexedCorpus, build_indexed
from train_entry.data.tokenizer import load_tokenizer, train_bpe
from train_entry.downstream.harness import require_harness
from train_entry.downstream.scores import DownstreamScores
from train_entry.downstream.tasks import DownstreamPlan
from train_entry.mix import MixRatio
from train_entry.trial_config import BaseLosses, CorpusPrefixes, TrialConfig

Cached = TypeVar("Cached", bound=BaseModel)
BASE_LOSSES_BYTES = 256 << 20
"""Most bytes of a base-loss cache entry read back: the base's loss, tokens and weight of each validation document of
both sides, at most 2 x 10^6 documents (train_entry.text_losses.MAX_DOCUMENTS) of about 60 characters."""


def cache_root() -> Path:
    """$CPT_SWEEP_CACHE, default ~/.cache/cpt-sweep: shared by every sweep on this machine."""
    return Path(os.environ.get("CPT_SWEEP_CACHE", "~/.cache/cpt-sweep")).expanduser()


@dataclass(frozen=True)
class Prepared:
    """What every trial of a sweep shares; plain data, cheap to ship to Ray workers."""

    spec: SweepSpec
    tokenizer_dir: Path
    base_dir: Path
    train: CorpusPrefixes
    valid: CorpusPrefixes
    """The whole validation samples: what the built-in base's pretraining measures itself on."""
    texts: list[CorpusPrefixes]
    """Disjoint texts of whole documents of the validation samples (train_entry.data.draws): 0 the pool, which the
    search's trials and replicates are measured on, 1 + r the draw of confirmation round r."""
    base_losses: list[BaseLosses]
    """The base's own losses on each text, document by document: what a trial's final figures on it are relative to."""
    interim_base: BaseLosses
    """The base's own losses on the pool's interim windows: what every evaluation's figures are relative to."""
    corpus_stats: dict[str, CorpusStats]
    """Per corpus split ("domain.train", ...): documents, tokens, the share its sample covers, what was skipped."""
    downstream: DownstreamPlan | None = None
    """The benchmark tasks every completed trial is scored on (evaluation.downstream); None: none."""
    downstream_base: DownstreamScores | None = None
    """The base's scores on them, measured once: what each trial's drop is relative to (None: not scored)."""

    def trial_config(
        self, *, lr_fraction: float, mix: MixRatio, output_dir: Path, seed: int | None = None, valid_draw: int = 0
    ) -> TrialConfig:
        """One trial of the sweep; `seed` is its training seed (default: the proxy's), `valid_draw` the validation
        text of its final figures (0: the pool, the search's; 1 + r: confirmation round r's draw)."""
        return TrialConfig(
            lr_fraction=lr_fraction,
            mix=mix,
            base_dir=str(self.base_dir),
            tokenizer_dir=str(self.tokenizer_dir),
            max_lr=self.spec.base.max_lr,
            base_losses=self.interim_base,
            final_base_losses=self.base_losses[valid_draw],
            train=self.train,
            valid=self.texts[0],
            draw_valid=self.texts[valid_draw] if valid_draw else None,
            valid_draw=valid_draw,
            non_english_share=self.non_english_share,
            proxy=self.spec.proxy,
            threads=self.spec.execution.cpus,
            activation_checkpointing=self.spec.execution.activation_checkpointing,
            compile=self.spec.execution.compile,
            checkpoint_interval=self.spec.execution.checkpoint_interval,
            downstream=self.downstream,
            downstream_base=self.downstream_base,
            output_dir=str(output_dir.resolve()),
            seed=seed,
        )

    @property
    def non_english_share(self) -> float:
        non_english = self.spec.data.non_english
        return non_english.share if non_english is not None else 0.0

    def base_manifest(self) -> dict[str, Any]:
        """The built-in base's manifest, or a short description of a Hugging Face base."""
        manifest_path = self.base_dir / MANIFEST
        manifest = _manifest(manifest_path) if manifest_path.is_file() else {}
        return {
            "model": self.spec.base.model,
            "path": str(self.base_dir),
            "max_lr": self.spec.base.max_lr,
            **manifest,
            "sweep validation losses (the pool)": self.base_losses[0].model_dump(
                include={"domain_loss", "general_loss"}
            ),
        }


def _manifest(path: Path) -> dict[str, Any]:
    """A built base's manifest as `sweep base` prints it: a JSON object of at most 1 MiB; CorruptFile naming it."""
    try:
        if path.stat().st_size > 1 << 20:
            raise ValueError("more than 1 MiB")
        manifest = json.loads(path.read_bytes())
        if not isinstance(manifest, dict):
            raise ValueError("not an object of keys")
    except (OSError, ValueError) as exc:
        raise CorruptFile(
            f"{path}: not the manifest cpt-sweep wrote for the base ({exc}); remove {path.parent} and it is built again"
        ) from None
    return manifest


def prepare(spec: SweepSpec, *, shipped: Path | None = SHIPPED_DIR, root: Path | None = None) -> Prepared:
    """The tokenizer, each corpus's sample as an indexed dataset, the validation texts, the base and its losses on
    them, each built or found in the cache (`root`, default cache_root()); the built-in base and its tokenizer are
    the `shipped` ones when they are the spec's (sweep.run.shipped_base; None: never). Validation text too short for
    its texts' text error is refused (CorpusError) before the base is built or any trial runs."""
    root = root or cache_root()
    data = spec.data
    downstream = spec.evaluation.downstream
    if downstream is not None:
        require_harness()  # before any compute: without lm-evaluation-harness no trial could be scored
    ready, why_not_shipped = shipped_base(spec, shipped) if shipped is not None else (None, "")
    tokenizer_dir = ready or _tokenizer_dir(spec.base, data, root)
    corpora = data.corpora()
    max_tokens = sample_tokens(spec)
    indexed = {
        name: _sample(name, corpus, getattr(data, name.split(".")[0]), tokenizer_dir, max_tokens[name], data, root)
        for name, corpus in corpora.items()
    }
    prefixes = {
        split: CorpusPrefixes(
            general=indexed[f"general.{split}"].prefix,
            domain=indexed[f"domain.{split}"].prefix,
            non_english=indexed[f"non_english.{split}"].prefix if data.non_english else None,
        )
        for split in ("train", "valid")
    }
    non_english_share = data.non_english.share if data.non_english else 0.0
    texts = validation_texts(spec, prefixes["valid"], root)
    base_dir = ready or _base_dir(spec.base, tokenizer_dir, prefixes, non_english_share, root, why_not_shipped)
    return Prepared(
        spec=spec,
        tokenizer_dir=tokenizer_dir,
        base_dir=base_dir,
        train=prefixes["train"],
        valid=prefixes["valid"],
        texts=texts,
        base_losses=[_base_losses(spec, base_dir, text, non_english_share, root) for text in texts],
        interim_base=_base_losses(spec, base_dir, texts[0], non_english_share, root, interim=True),
        corpus_stats={name: entry.stats for name, entry in indexed.items()},
        downstream=downstream.plan() if downstream is not None else None,
        downstream_base=_base_scores(downstream.plan(), base_dir, tokenizer_dir, root)
        if downstream is not None and downstream.base
        else None,
    )


def validation_texts(spec: SweepSpec, valid: CorpusPrefixes, root: Path) -> list[CorpusPrefixes]:
    """Each validation sample dealt into the pool and confirmation_draws(spec) draws of whole documents
    (train_entry.data.draws), checked to hold enough documents per side for a text error; CorpusError otherwise."""
    draws = confirmation_draws(spec)
    weights = validation_weights(spec)
    split = {
        corpus: split_texts(
            prefix,
            draws=draws,
            cache_root=root / "datasets",
            label=f"data.{corpus}.valid",
            chunk_tokens=getattr(spec.data, corpus).independent_chunks,
        )
        for corpus in weights
        if (prefix := getattr(valid, corpus)) is not None
    }
    texts = [
        CorpusPrefixes(**{corpus: prefixes[text] for corpus, prefixes in split.items()}) for text in range(1 + draws)
    ]
    sides = {"domain": ("domain",), "general": tuple(corpus for corpus in weights if corpus != "domain")}
    check_texts(
        [
            _text_side(
                f"{text_name(index)}'s {side} side",
                [(f"data.{c}.valid", getattr(text, c), weights[c]) for c in corpora],
            )
            for index, text in enumerate(texts)
            for side, corpora in sides.items()
        ],
        draws=draws,
        chunked=all(getattr(spec.data, corpus).independent_chunks is not None for corpus in split),
    )
    return texts


def _text_side(name: str, corpora: list[tuple[str, str, float]]) -> TextSide:
    """One side of one text as check_texts reads it: (corpus key, prefix, share) of each of its corpora."""
    tokens: list[int] = []
    weights: list[float] = []
    for _, prefix, share in corpora:
        lengths = text_lengths(prefix)
        tokens += lengths
        weights += [share * n / max(sum(lengths), 1) for n in lengths]
    return TextSide(
        name=name, corpora=tuple(key for key, _, _ in corpora), tokens=tuple(tokens), weights=tuple(weights)
    )


def _sample(
    name: str, corpus: Corpus, config: CorpusConfig, tokenizer_dir: Path, max_tokens: int, data: DataConfig, root: Path
) -> IndexedCorpus:
    """The corpus's sample of max_tokens tokens (all of it when smaller) as megatron-core reads it: tokenised text,
    or Megatron prefixes read as they are, once their tokenizer is shown to be the base's."""
    prefixes = corpus.prefixes()
    with sample_progress(f"data.{name}", max_tokens) as on_progress:
        if prefixes is None:
            return build_indexed(
                corpus,
                tokenizer_dir,
                root / "datasets",
                max_tokens=max_tokens,
                max_document_bytes=data.max_document_bytes,
                on_progress=on_progress,
            )
        # Imported here: it imports megatron-core (seconds), which a sweep of cached datasets never needs.
        from train_entry.data.megatron_prefix import check_tokenizer, sample_prefixes

        check_tokenizer(config.tokenizer, tokenizer_dir)
        vocab_size = len(load_tokenizer(tokenizer_dir))
        return sample_prefixes(
            prefixes,
            vocab_size=vocab_size,
            cache_root=root / "datasets",
            max_tokens=max_tokens,
            on_progress=on_progress,
        )


def _tokenizer_dir(base: BaseConfig, data: DataConfig, root: Path) -> Path:
    """base.tokenizer, else the base's own: for the built-in base a BPE trained on the general side (cached)."""
    if base.tokenizer is not None:
        tokenizer_dir = base.tokenizer
    elif base.is_builtin:
        general_side = [data.general.corpus("train")] + ([data.non_english.corpus("train")] if data.non_english else [])
        tokenizer_dir = train_bpe(
            general_side, base.builtin.vocab_size, root / "tokenizers", max_document_bytes=data.max_document_bytes
        )
    else:
        tokenizer_dir = Path(base.model)
    _check_vocab(base, tokenizer_dir)
    return tokenizer_dir


def _base_dir(
    base: BaseConfig,
    tokenizer_dir: Path,
    prefixes: dict[str, CorpusPrefixes],
    non_english_share: float,
    root: Path,
    why_not_shipped: str,
) -> Path:
    """The base's Hugging Face directory; the built-in base is pretrained on the general side the first time,
    saying first why the shipped one is not used."""
    if not base.is_builtin:
        return Path(base.model)
    label, steps = "pretraining builtin:tiny-llama", base.builtin.pretrain_steps
    with step_progress(label, steps, lazy=True, note=why_not_shipped) as on_step:
        return ensure_builtin_base(
            base.builtin,
            max_lr=base.max_lr,
            tokenizer_dir=tokenizer_dir,
            train=prefixes["train"],
            valid=prefixes["valid"],
            non_english_share=non_english_share,
            cache_root=root / "bases",
            on_step=on_step,
        )


def _check_vocab(base: BaseConfig, tokenizer_dir: Path) -> None:
    """A tokenizer whose ids exceed the model's embedding would fail deep inside the first step."""
    if base.is_builtin and base.tokenizer is None:
        return  # its own BPE, trained to at most base.builtin.vocab_size tokens, special ones included
    from train_entry.model import base_vocab_size

    # transformers' own check of the whole config.json first: the tokenizer reads it too, and would
    # report its faults as the tokenizer's.
    embedding = base.builtin.vocab_size if base.is_builtin else base_vocab_size(Path(base.model))
    tokens = len(load_tokenizer(tokenizer_dir))
    if embedding is None or tokens <= embedding:
        return
    if base.tokenizer is not None:
        raise CorpusError(
            f"base.tokenizer {tokenizer_dir} has {tokens} tokens but the base {base.model} embeds only "
            f"{embedding}; use the base's own tokenizer (leave base.tokenizer unset)"
        )
    raise CorpusError(
        f"{base.model}: its own tokenizer has {tokens} tokens but its config.json's vocab_size is {embedding}: the "
        f"tokenizer and the weights in that directory do not belong together; name the base's tokenizer in "
        f"base.tokenizer"
    )


def _base_losses(
    spec: SweepSpec, base_dir: Path, valid: CorpusPrefixes, share: float, root: Path, *, interim: bool = False
) -> BaseLosses:
    """Measured once per (base, validation text, eval settings) and cached as a JSON file; `interim`: on the text's
    interim windows (proxy.eval_sequences per side) rather than all of it."""
    proxy = spec.proxy
    key = digest(
        "base-losses-3",
        *_identity(base_dir),
        valid.model_dump_json(),
        *(prefix_fingerprint(prefix) for prefix in (valid.general, valid.domain, valid.non_english) if prefix),
        share,
        proxy.seq_len,
        proxy.eval_sequences if interim else "whole",
    )
    def measure() -> BaseLosses:
        from train_entry.proxy import measure_base  # torch and transformers, imported only when not cached

        return measure_base(base_dir, valid, share, proxy, interim=interim)

    return _cached(root / "base_losses" / f"{key[:24]}.json", BaseLosses, measure, what="base-loss")


def _base_scores(plan: DownstreamPlan, base_dir: Path, tokenizer_dir: Path, root: Path) -> DownstreamScores:
    """The base's downstream scores, measured once per (base, tasks and their data, limit) and cached."""
    data = [Path(file) for task in plan.tasks for file in _data_files(task.config)]
    key = digest("base-downstream-1", *_identity(base_dir), plan.model_dump_json(), *_file_identity(data))

    def measure() -> DownstreamScores:
        from train_entry.proxy import score_base  # torch, transformers and lm_eval: only when not cached

        print(f"scoring the base on {len(plan.tasks)} downstream task(s) ...", file=sys.stderr)
        return score_base(base_dir, str(tokenizer_dir), plan)

    return _cached(root / "base_downstream" / f"{key[:24]}.json", DownstreamScores, measure, what="base-score")


def _data_files(config: dict[str, Any]) -> list[str]:
    files = (config.get("dataset_kwargs") or {}).get("data_files") or []
    return [name for names in (files.values() if isinstance(files, dict) else [files]) for name in names]


def _identity(base_dir: Path) -> list[str]:
    """The base's files as a cache key sees them: a changed weight file is another base."""
    return _file_identity(sorted(path for path in base_dir.iterdir() if path.is_file()))


def _file_identity(files: list[Path]) -> list[str]:
    return [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in files]


def _cached(path: Path, model: type[Cached], measure: Callable[[], Cached], *, what: str) -> Cached:
    """`model` read from the cache entry `path`, or measured and written there (a damaged entry is a miss)."""
    if path.is_file():
        try:
            return read_model(path, model, fmt=None, what=f"{what} cache entry", max_bytes=BASE_LOSSES_BYTES)
        except CorruptFile as exc:  # a damaged entry is a miss: measured again and replaced
            print(f"warning: {exc}; measuring the base again", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    measured = measure()
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        staged = Path(scratch) / "measured.json"
        staged.write_text(measured.model_dump_json())
        staged.replace(path)
    return measured
