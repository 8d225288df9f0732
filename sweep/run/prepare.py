"""Everything a sweep's trials share, built once before any trial starts.

The tokenizer, the indexed corpora, the base (pretrained here if it is the built-in one) and the
base's own losses on the fixed validation sets. Each is cached by content under the cache root,
so a second sweep over the same data and base starts at once.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sweep.files.records import CorruptFile, read_model
from sweep.run.progress import sample_progress, step_progress
from sweep.run.sample_size import sample_tokens, validation_draws, validation_weights
from sweep.run.shipped_base import shipped_base
from sweep.spec.spec import BaseConfig, CorpusConfig, DataConfig, SweepSpec
from train_entry.base_cache import ensure_builtin_base
from train_entry.builtin_base import MANIFEST, SHIPPED_DIR
from train_entry.data.cache import digest
from train_entry.data.corpus import Corpus, CorpusError, CorpusStats
from train_entry.data.fingerprint import prefix_fingerprint
from train_entry.data.indexed import IndexedCorpus, build_indexed
from train_entry.data.tokenizer import load_tokenizer, train_bpe
from train_entry.mix import MixRatio, tokens_read
from train_entry.trial_config import BaseLosses, CorpusPrefixes, TrialConfig

BASE_LOSSES_BYTES = 16 << 20
"""Most bytes of a base-loss cache entry read back: the base's loss on each validation sequence of both sets, at most
2 x 100,000 numbers (ProxyConfig.eval_sequences' bound) of about 20 characters."""


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
    valid_draws: list[CorpusPrefixes]
    """Disjoint draws of the validation samples (train_entry.data.draws): draw 0 measures the search's trials and
    replicates, draw 1 + r the confirmation trials of round r; any `extra_draws` prepare() was asked for follow."""
    base_losses: list[BaseLosses]
    """The base's own losses on each draw, sequence by sequence: what a trial measured on that draw is relative to."""
    corpus_stats: dict[str, CorpusStats]
    """Per corpus split ("domain.train", ...): documents, tokens, the share its sample covers, what was skipped."""

    def trial_config(
        self, *, lr_fraction: float, mix: MixRatio, output_dir: Path, seed: int | None = None, valid_draw: int = 0
    ) -> TrialConfig:
        """One trial of the sweep; `seed` is its training seed (default: the proxy's), `valid_draw` the validation
        draw it is measured on (0: the search's)."""
        return TrialConfig(
            lr_fraction=lr_fraction,
            mix=mix,
            base_dir=str(self.base_dir),
            tokenizer_dir=str(self.tokenizer_dir),
            max_lr=self.spec.base.max_lr,
            base_losses=self.base_losses[valid_draw],
            train=self.train,
            valid=self.valid_draws[valid_draw],
            valid_draw=valid_draw,
            non_english_share=self.non_english_share,
            proxy=self.spec.proxy,
            threads=self.spec.execution.cpus,
            activation_checkpointing=self.spec.execution.activation_checkpointing,
            compile=self.spec.execution.compile,
            checkpoint_interval=self.spec.execution.checkpoint_interval,
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
            "sweep validation losses": self.base_losses[0].model_dump(include={"domain_loss", "general_loss"}),
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


def prepare(
    spec: SweepSpec, *, shipped: Path | None = SHIPPED_DIR, root: Path | None = None, extra_draws: int = 0
) -> Prepared:
    """The tokenizer, each corpus's sample as an indexed dataset, the base and its validation losses, each built or
    found in the cache (`root`, default cache_root()); the built-in base and its tokenizer are the `shipped` ones
    when they are the spec's (sweep.run.shipped_base; None: never). `extra_draws` validation draws follow the
    sweep's own: text none of its trials is measured on (benchmarks/decision_quality.py), drawn from the same
    samples, so draws 0 .. validation_draws(spec) - 1 stay the sweep's unless the text is too short for them all
    (train_entry.data.draws deals it round-robin then: the caller compares)."""
    root = root or cache_root()
    data = spec.data
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
    draws = _validation_draws(spec, prefixes["valid"], root, validation_draws(spec) + extra_draws)
    _warn_short_validation(spec, indexed, draws)
    base_dir = ready or _base_dir(spec.base, tokenizer_dir, prefixes, non_english_share, root, why_not_shipped)
    return Prepared(
        spec=spec,
        tokenizer_dir=tokenizer_dir,
        base_dir=base_dir,
        train=prefixes["train"],
        valid=prefixes["valid"],
        valid_draws=draws,
        base_losses=[_base_losses(spec, base_dir, tokenizer_dir, draw, non_english_share, root) for draw in draws],
        corpus_stats={name: entry.stats for name, entry in indexed.items()},
    )


def _validation_draws(spec: SweepSpec, valid: CorpusPrefixes, root: Path, count: int) -> list[CorpusPrefixes]:
    """Each validation sample split into `count` disjoint draws, each sized by what one validation set reads of that
    corpus (train_entry.data.draws)."""
    from train_entry.data.draws import split_draws  # megatron-core, imported only when the draws are not cached

    proxy = spec.proxy
    split = {
        corpus: split_draws(
            prefix,
            draws=count,
            draw_tokens=tokens_read(proxy.eval_sequences, weight, proxy.seq_len),
            cache_root=root / "datasets",
            label=f"data.{corpus}.valid",
        )
        for corpus, weight in validation_weights(spec).items()
        if (prefix := getattr(valid, corpus)) is not None
    }
    return [CorpusPrefixes(**{corpus: prefixes[draw] for corpus, prefixes in split.items()}) for draw in range(count)]


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


def _warn_short_validation(spec: SweepSpec, indexed: dict[str, IndexedCorpus], draws: list[CorpusPrefixes]) -> None:
    """Validation text shorter than its draws' sets repeats itself: the losses still work, but say so."""
    proxy = spec.proxy
    for corpus, weight in validation_weights(spec).items():
        entry = indexed.get(f"{corpus}.valid")
        wanted = len(draws) * tokens_read(proxy.eval_sequences, weight, proxy.seq_len)
        if entry is not None and entry.stats.tokens < wanted:
            print(
                f"warning: data.{corpus}.valid has {entry.stats.tokens:,} tokens, fewer than its {len(draws)} disjoint "
                f"validation draw(s) of proxy.eval_sequences {proxy.eval_sequences} x (seq_len + 1) tokens read "
                f"({wanted:,}): each draw's sequences repeat its text; add held-out text or lower proxy.eval_sequences",
                file=sys.stderr,
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
    spec: SweepSpec, base_dir: Path, tokenizer_dir: Path, valid: CorpusPrefixes, share: float, root: Path
) -> BaseLosses:
    """Measured once per (base, validation data, eval settings) and cached as a small JSON file."""
    base_files = sorted(path for path in base_dir.iterdir() if path.is_file())
    identity = [f"{p.name}:{p.stat().st_size}:{p.stat().st_mtime_ns}" for p in base_files]
    proxy = spec.proxy
    key = digest(
        "base-losses-2",
        *identity,
        valid.model_dump_json(),
        *(prefix_fingerprint(prefix) for prefix in (valid.general, valid.domain, valid.non_english) if prefix),
        share,
        proxy.seq_len,
        proxy.eval_sequences,
        proxy.seed,
    )
    path = root / "base_losses" / f"{key[:24]}.json"
    if path.is_file():
        try:
            return read_model(path, BaseLosses, fmt=None, what="base-loss cache entry", max_bytes=BASE_LOSSES_BYTES)
        except CorruptFile as exc:  # a damaged entry is a miss: measured again and replaced
            print(f"warning: {exc}; measuring the base again", file=sys.stderr)
    from train_entry.proxy import measure_base  # torch and transformers, imported only when the losses are not cached

    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=path.parent) as scratch:
        losses = measure_base(base_dir, tokenizer_dir, valid, share, proxy, cache_dir=Path(scratch))
        staged = Path(scratch) / "losses.json"
        staged.write_text(losses.model_dump_json())
        staged.replace(path)
    return losses
