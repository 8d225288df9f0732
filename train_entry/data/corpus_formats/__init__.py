"""The corpus formats a sweep reads, one module each behind one interface (base.CorpusFormat), and the registry a
spec's `format` and a shard's name are looked up in.

A new format is a module here with a CorpusFormat subclass, and one entry in FORMATS.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from train_entry.data.corpus import CorpusError
from train_entry.data.corpus_formats.base import CorpusFormat
from train_entry.data.corpus_formats.jsonl import JsonLines
from train_entry.data.corpus_formats.parquet import Parquet
from train_entry.data.corpus_formats.plain_text import PlainText
from train_entry.data.shard_bytes import CODEC_SUFFIXES, UNREAD_SUFFIXES, Codec

FORMATS: dict[str, CorpusFormat] = {fmt.name: fmt for fmt in (JsonLines(), PlainText(), Parquet())}
"""Every format by the name a spec gives it."""
UNDECLARED = FORMATS[PlainText.name]
"""What a shard is when its name declares no format: most corpora without a suffix are text."""


@dataclass(frozen=True)
class ShardFormat:
    format: CorpusFormat
    codec: Codec = Codec.NONE


def format_named(name: str) -> CorpusFormat:
    """The registered format `name`; ValueError naming the valid ones."""
    if name not in FORMATS:
        raise ValueError(f"no corpus format {name!r}; the formats: {', '.join(FORMATS)}")
    return FORMATS[name]


def declared_format(path: Path, named: str | None = None) -> ShardFormat:
    """The format a shard's name promises (`x.jsonl.zst` is zstd JSONL, `x.parquet` Parquet, a name no format
    declares plain text), or the format `named` (a spec's `format`) with the codec its name says."""
    suffixes = [suffix.lower() for suffix in path.suffixes]
    codec = CODEC_SUFFIXES.get(suffixes[-1], Codec.NONE) if suffixes else Codec.NONE
    inner = suffixes[:-1] if codec is not Codec.NONE else suffixes
    last = inner[-1] if inner else ""
    for suffix in (suffixes[-1:] if suffixes else []) + inner[-1:]:
        if suffix in UNREAD_SUFFIXES:
            raise CorpusError(f"{path}: {suffix} files are not read here; give {UNREAD_SUFFIXES[suffix]} instead")
    if named is not None:
        fmt = format_named(named)
    else:
        fmt = next((fmt for fmt in FORMATS.values() if last in fmt.suffixes), UNDECLARED)
    if codec is not Codec.NONE and not fmt.compressible:
        raise CorpusError(
            f"{path}: a {codec.value}-compressed {fmt.label} file is not read; {fmt.label} compresses its own columns"
        )
    return ShardFormat(fmt, codec)


def check_format(path: Path, fmt: ShardFormat) -> None:
    """Raises CorpusError when the file's magic bytes contradict its format (or name a format not read here)."""
    fmt.format.check(path, fmt.codec)
