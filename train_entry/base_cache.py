"""The built-in base in the cache: its identity, and pretraining (train_entry.pretrain) only when it is missing.

Kept apart from the pretraining so that a sweep whose base is cached, every sweep of a spec but the first, finds it
without importing torch or transformers.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from train_entry.builtin_base import MANIFEST, RECIPE_VERSION, BuiltinBaseConfig
from train_entry.data.cache import cached_dir, digest
from train_entry.data.fingerprint import prefix_fingerprint
from train_entry.data.tokenizer import tokenizer_files
from train_entry.trial_config import CorpusPrefixes


def ensure_builtin_base(
    config: BuiltinBaseConfig,
    *,
    cache_root: Path,
    max_lr: float,
    tokenizer_dir: Path,
    train: CorpusPrefixes,
    valid: CorpusPrefixes,
    non_english_share: float,
    on_step: Callable[[int, float], None] | None = None,
) -> Path:
    """The built-in base's Hugging Face directory, pretrained first if it is not cached yet.

    Cached by its config, max_lr, tokenizer and training data: the fingerprints of the indexed corpora's files
    (a cached sample's or a Megatron prefix read in place) stand for the data.
    """
    non_english = None if train.non_english is None else prefix_fingerprint(train.non_english)
    identity = {
        "recipe_version": RECIPE_VERSION,
        "config": config.model_dump(),
        "max_lr": max_lr,
        "tokenizer": digest(*tokenizer_files(tokenizer_dir)),
        "data": {"general": prefix_fingerprint(train.general), "non_english": non_english},
        "non_english_share": non_english_share,
    }
    key = digest(json.dumps(identity, sort_keys=True))
    entry = cache_root / f"tiny-llama-{key[:20]}"

    def build(directory: Path) -> None:
        from train_entry.pretrain import pretrain

        manifest = pretrain(
            config,
            max_lr=max_lr,
            tokenizer_dir=tokenizer_dir,
            train=train,
            valid=valid,
            non_english_share=non_english_share,
            output_dir=directory,
            on_step=on_step,
        )
        (directory / MANIFEST).write_text(json.dumps({**identity, **manifest}, indent=2))

    return cached_dir(entry, build)
