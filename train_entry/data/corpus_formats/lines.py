"""What the line formats (JSONL, plain text) share: a file of lines, optionally compressed, read a stratum at a
time by seeking (train_entry.data.shards.TextShard) or in one pass over a stream (StreamShard)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import ClassVar

from train_entry.data.corpus import CorpusError
from train_entry.data.corpus_formats.base import CorpusFormat, Shard
from train_entry.data.documents import DocumentParser, Line
from train_entry.data.shard_bytes import CODEC_MAGIC, HEAD_BYTES, Codec, check_text_head, looks_like
from train_entry.data.shards import StreamShard, TextShard


class LineFormat(CorpusFormat):
    spans_lines: ClassVar[bool]
    """Whether a document runs over lines up to a blank one (plain text) rather than being one line (JSONL): what
    decides which stratum owns a line."""

    def check(self, path: Path, codec: Codec) -> None:
        with path.open("rb") as stream:
            head = stream.read(HEAD_BYTES)
        if codec is Codec.NONE:
            check_text_head(path, head, self.label)
            return
        seen = looks_like(head)
        if seen != CODEC_MAGIC[codec]:
            raise CorpusError(
                f"{path}: named {path.suffix} but it is not {codec.value} data (its first bytes look like {seen}); "
                f"rename it to what it is"
            )

    def open(self, path: Path, codec: Codec, *, stratum_bytes: int, parser: DocumentParser) -> Shard:
        if codec is Codec.NONE:
            return TextShard(path, self, stratum_bytes=stratum_bytes, parser=parser)
        return StreamShard(path, self, codec, stratum_bytes=stratum_bytes, parser=parser)

    @abstractmethod
    def documents(self, lines: Iterable[Line], parser: DocumentParser) -> Iterator[str]:
        """The documents of one stratum's lines (already counted), each usable one counted by parser.count, every
        skipped one counted with its reason."""
