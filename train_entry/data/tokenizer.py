"""The tokenizer: a byte-level BPE trained on the general corpora, and its two faces.

The BPE is trained on general text only, so that domain text is as new to the built-in base's
vocabulary as it is to a real base's. It is saved as a Hugging Face tokenizer directory, which the
proxy loads with AutoTokenizer and megatron-core's datasets load through megatron-core's own
Hugging Face wrapper; both read the same files, so they agree on every id.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

from train_entry.data.cache import cached_dir, digest
from train_entry.data.corpus import DEFAULT_MAX_DOCUMENT_BYTES, Corpus, CorpusError
from train_entry.data.fingerprint import corpus_fingerprint
from train_entry.data.sample import read_documents
from train_entry.hf_dir import CONFIG_JSON, first_line, model_config, refuse_remote_code

if TYPE_CHECKING:
    from megatron.core.tokenizers import MegatronTokenizerBase
    from transformers import PreTrainedTokenizerBase

EOD_TOKEN = "<|endoftext|>"
"""Ends every document: the eos of the Hugging Face tokenizer and megatron-core's eod."""
PAD_TOKEN = "<|pad|>"
"""Never in the data; a distinct id so megatron-core does not mistake eod for padding."""
SPECIAL_TOKENS = (EOD_TOKEN, PAD_TOKEN)

BPE_RECIPE_VERSION = 2
"""Part of the cache key: bump it when the training recipe changes, so old tokenizers are not reused."""
BPE_SAMPLE_BYTES = 32 << 20
"""Stored bytes of each corpus the BPE is trained on, spread over it (a smaller corpus whole): a few-thousand-merge
vocabulary settles on a few MB of text, and a general corpus may be terabytes."""

MIN_VOCAB_SIZE = 256 + len(SPECIAL_TOKENS)
"""Every byte is a token of a byte-level BPE, so no text is ever out of vocabulary."""

_WEIGHT_SUFFIXES = frozenset({".safetensors", ".bin", ".pt", ".pth", ".ckpt", ".h5", ".msgpack", ".gguf", ".onnx"})
"""Model weights that may share a directory with the tokenizer (a base's own); never hashed."""


def train_bpe(
    corpora: Sequence[Corpus],
    vocab_size: int,
    cache_root: Path,
    *,
    max_document_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
) -> Path:
    """A Hugging Face tokenizer directory holding a byte-level BPE trained on `corpora` (BPE_SAMPLE_BYTES of each).

    Cached under cache_root by the corpora's fingerprints, text fields (and formats, when named), vocab_size and the recipe version:
    training is deterministic, so the same inputs always give the same tokenizer.
    """
    if vocab_size < MIN_VOCAB_SIZE:
        raise ValueError(
            f"vocab_size must be at least {MIN_VOCAB_SIZE} (256 byte tokens + {len(SPECIAL_TOKENS)} special), "
            f"got {vocab_size=}"
        )
    if not corpora:
        raise ValueError("train_bpe needs at least one corpus, got none")
    fields = [part for corpus in corpora for part in (corpus_fingerprint(corpus.shards()), *corpus.reading_key())]
    key = digest(f"bpe-recipe-{BPE_RECIPE_VERSION}", vocab_size, max_document_bytes, BPE_SAMPLE_BYTES, *fields)
    entry = cache_root / f"bpe-{vocab_size}-{key[:20]}"
    return cached_dir(entry, lambda directory: _train(corpora, vocab_size, max_document_bytes, directory))


def _train(corpora: Sequence[Corpus], vocab_size: int, max_document_bytes: int, directory: Path) -> None:
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    documents = itertools.chain.from_iterable(
        read_documents(corpus, max_bytes=BPE_SAMPLE_BYTES, max_document_bytes=max_document_bytes) for corpus in corpora
    )
    bpe.train_from_iterator(documents, trainer=trainer)
    PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token=EOD_TOKEN, pad_token=PAD_TOKEN).save_pretrained(directory)


def load_tokenizer(directory: Path) -> PreTrainedTokenizerBase:
    """The Hugging Face tokenizer saved in `directory` (local files only, nothing downloaded, none of its code run)."""
    # Imported here, as megatron-core below: transformers takes seconds to import, and the driver of a sweep of the
    # built-in base whose tokenizer and corpora are cached (every one but the first) never loads a tokenizer.
    from huggingface_hub.errors import StrictDataclassError
    from transformers import AutoTokenizer

    _check_tokenizer_dir(directory)
    try:
        tokenizer = AutoTokenizer.from_pretrained(directory, local_files_only=True, trust_remote_code=False)
    except (OSError, ValueError, TypeError, StrictDataclassError) as error:
        raise CorpusError(_not_loadable(directory, error)) from None
    if tokenizer.eos_token_id is None:
        raise CorpusError(_no_eos(directory))
    return tokenizer


def megatron_tokenizer(directory: Path) -> MegatronTokenizerBase:
    """The tokenizer in `directory` as megatron-core's GPTDatasetConfig takes it (vocab_size, eod, pad)."""
    # Imported here: megatron-core takes seconds to import, and training a BPE does not need it.
    from megatron.core.tokenizers import MegatronTokenizer

    _check_tokenizer_dir(directory)
    try:
        tokenizer = MegatronTokenizer.from_pretrained(
            str(directory),
            metadata_path={"library": "huggingface", "model_type": "gpt"},
            use_fast=True,
            trust_remote_code=False,  # megatron-core's default too; said here, where it matters
        )
    except ValueError as error:
        raise CorpusError(_not_loadable(directory, error)) from None
    if tokenizer.eod is None:
        raise CorpusError(_no_eos(directory))
    return tokenizer


def _check_tokenizer_dir(directory: Path) -> None:
    """No auto_map (train_entry.hf_dir), and a config.json, which AutoTokenizer reads too, that is one."""
    refuse_remote_code(directory)
    if (Path(directory) / CONFIG_JSON).is_file():
        model_config(directory)


def tokenizer_files(directory: Path) -> list[Path]:
    """The files that define the tokenizer in `directory`, in a stable order (for cache keys)."""
    directory = Path(directory)
    if not directory.is_dir():
        raise CorpusError(f"{directory}: tokenizer directory not found")
    return sorted(path for path in directory.iterdir() if path.is_file() and path.suffix not in _WEIGHT_SUFFIXES)


def _not_loadable(directory: Path, error: Exception) -> str:
    return f"{directory}: not a loadable Hugging Face tokenizer directory ({first_line(error)})"


def _no_eos(directory: Path) -> str:
    return (
        f"{directory}: the tokenizer has no eos token, which the data pipeline appends to every "
        f"document as its end-of-document marker; set eos_token in its tokenizer_config.json"
    )
