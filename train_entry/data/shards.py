"""A file of lines (a line format's shard) cut into strata of about equal stored bytes; a stratum's documents are
those that start in it.

Every document starts in exactly one stratum, so reading every stratum reads every document once, and reading
some reads each document with the same chance whatever its length. A plain file is read a stratum at a time by
seeking to its first byte; a compressed stream cannot be entered in the middle, so one pass over it extracts the
strata asked for (placed by compressed offset, to within a read chunk) into a spill file. Parquet's strata are
its own (train_entry.data.corpus_formats.parquet).
"""

from __future__ import annotations

import codecs
import enum
import math
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO, Protocol

from train_entry.data.documents import DocumentParser, Line
from train_entry.data.shard_bytes import DECOMPRESSION_ERRORS, HEAD_BYTES, Codec, check_text_head, corrupt, open_stream

_SKIP_CHUNK = 1 << 20
"""Bytes read at a time while passing over the rest of an oversized line."""
_STREAM_CHUNK = 1 << 14
"""Compressed bytes a decompressor takes at a time: how finely a stream's lines are placed in strata."""
_SPACE = b" \t\r\x0b\x0c"
"""ASCII whitespace but the newline: what bytes.strip() removes from a blank line."""


class LineFormat(Protocol):
    """What a shard of lines needs of its format (train_entry.data.corpus_formats.lines.LineFormat is one: the
    formats open their shards here, so this module names none of them)."""

    label: str
    spans_lines: bool
    """Whether a document runs over lines up to a blank one (plain text) or is one line (JSONL)."""

    def documents(self, lines: Iterable[Line], parser: DocumentParser) -> Iterator[str]: ...


class _End:
    """The end of a stream, as read_line returns it (an empty line is b"")."""


END = _End()


class _At(enum.Enum):
    """Where a plain-text stratum's reader is."""

    BETWEEN = "between documents"
    OWNED = "in a document that starts in this stratum"
    FOREIGN = "in a document that started in an earlier stratum"


def read_line(stream: BinaryIO, limit: int) -> Line | _End:
    """The next line without its line break; None for one over `limit` bytes (passed over, never held whole)."""
    line = stream.readline(limit + 1)
    if not line:
        return END
    if len(line) > limit and not line.endswith(b"\n"):
        while (rest := stream.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
            pass
        return None
    return line.rstrip(b"\r\n")


def _strata(size: int, stratum_bytes: int) -> int:
    return math.ceil(size / stratum_bytes) if size else 0


def stratum_start(k: int, size: int, strata: int) -> int:
    """The first byte of stratum k of `strata` over `size` bytes."""
    return k * size // strata


def _stratum_at(offset: int, size: int, strata: int) -> int:
    """The stratum holding byte `offset`: the largest k whose start is at or before it."""
    return min(strata - 1, ((offset + 1) * strata - 1) // size)


class TextShard:
    """A seekable JSONL or plain-text file; stratum k is the bytes [k * size // strata, (k + 1) * size // strata)."""

    def __init__(self, path: Path, fmt: LineFormat, *, stratum_bytes: int, parser: DocumentParser) -> None:
        self.path = path
        self.format = fmt
        self.size = path.stat().st_size
        self.strata = _strata(self.size, stratum_bytes)
        self.parser = parser
        self._file: BinaryIO | None = None

    @property
    def file(self) -> BinaryIO:
        """Opened at the first read and kept until released: a corpus of many shards holds few open."""
        if self._file is None:
            self._file = self.path.open("rb")
        return self._file

    def span(self, k: int) -> int:
        return stratum_start(k + 1, self.size, self.strata) - stratum_start(k, self.size, self.strata)

    def read(self, k: int) -> Iterator[str]:
        start, end = stratum_start(k, self.size, self.strata), stratum_start(k + 1, self.size, self.strata)
        lines = self._document_lines(start, end) if self.format.spans_lines else self._own_lines(start, end)
        return self.format.documents(self.parser.counted(lines), self.parser)

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _own_lines(self, start: int, end: int) -> Iterator[Line]:
        """The lines that start in [start, end), each a document of its own (JSONL)."""
        position = self._seek_line_start(start)
        limit = self.parser.max_document_bytes
        while position < end and (line := read_line(self.file, limit)) is not END:
            yield line
            position = self.file.tell()

    def _document_lines(self, start: int, end: int) -> Iterator[Line]:
        """The blank lines that start in [start, end) and the lines of the documents whose first line does.

        A document that started in an earlier stratum is passed over; one that starts here is read to its end,
        past `end` if it runs on.
        """
        position = self._seek_line_start(start)
        limit = self.parser.max_document_bytes
        state = _At.BETWEEN if position == 0 or self._previous_line_blank(position) else _At.FOREIGN
        while (line := read_line(self.file, limit)) is not END:
            blank = line is not None and not line.strip()
            if position >= end and (blank or state is not _At.OWNED):
                return
            if blank:
                state = _At.BETWEEN
            elif state is _At.BETWEEN:
                state = _At.OWNED
            if state is not _At.FOREIGN:
                yield line
            position = self.file.tell()

    def _seek_line_start(self, start: int) -> int:
        """Seeks to the first line that starts at or after `start`, and returns where it starts; the first line
        starts at 0 even past a byte-order mark, which is no text."""
        if start == 0:
            self.file.seek(0)
            if self.file.read(len(codecs.BOM_UTF8)) != codecs.BOM_UTF8:
                self.file.seek(0)
            return 0
        self.file.seek(start - 1)
        if self.file.read(1) != b"\n":
            while (rest := self.file.readline(_SKIP_CHUNK)) and not rest.endswith(b"\n"):
                pass
        return self.file.tell()

    def _previous_line_blank(self, position: int) -> bool:
        """Whether the line before the line starting at `position` holds only whitespace."""
        end = position - 1  # the newline that ends it
        while end > 0:
            begin = max(0, end - 4096)
            self.file.seek(begin)
            chunk = self.file.read(end - begin)
            if begin == 0 and chunk.startswith(codecs.BOM_UTF8):
                chunk = chunk[len(codecs.BOM_UTF8) :]
            text = chunk.rstrip(_SPACE)
            if text:
                self.file.seek(position)
                return text.endswith(b"\n")
            end = begin
        self.file.seek(position)
        return True


class StreamShard:
    """A compressed JSONL or plain-text file: strata by compressed offset, extracted by one pass per request."""

    def __init__(
        self, path: Path, fmt: LineFormat, codec: Codec, *, stratum_bytes: int, parser: DocumentParser
    ) -> None:
        self.path = path
        self.format = fmt
        self.codec = codec
        self.size = path.stat().st_size
        self.strata = _strata(self.size, stratum_bytes)
        self.parser = parser

    def span(self, k: int) -> int:
        return stratum_start(k + 1, self.size, self.strata) - stratum_start(k, self.size, self.strata)

    def extract(self, wanted: set[int], keep: Callable[[int, Line], None]) -> None:
        """One pass over the stream, handing keep(k, line) the lines of the wanted strata (up to the last of them)."""
        last = max(wanted)
        with self.path.open("rb") as raw:
            try:
                stream, counting = open_stream(raw, self.codec, chunk=_STREAM_CHUNK)
                with stream:
                    check_text_head(
                        self.path, stream.peek(HEAD_BYTES)[:HEAD_BYTES], self.format.label, decompressed=True
                    )
                    if stream.peek(len(codecs.BOM_UTF8)).startswith(codecs.BOM_UTF8):
                        stream.read(len(codecs.BOM_UTF8))
                    for owner, line in self._owned_lines(stream, lambda: counting.position):
                        if owner > last:
                            break
                        if owner in wanted:
                            keep(owner, line)
            except DECOMPRESSION_ERRORS as error:
                raise corrupt(self.path, self.codec, error) from None

    def documents(self, lines: Iterable[Line]) -> Iterator[str]:
        """The documents of one stratum's extracted lines."""
        return self.format.documents(self.parser.counted(lines), self.parser)

    def release(self) -> None:
        """Holds nothing open between passes."""

    def _owned_lines(self, stream: BinaryIO, position: Callable[[], int]) -> Iterator[tuple[int, Line]]:
        """Each line with the stratum owning it: the one it starts in, or (plain text) its document's first line's."""
        limit = self.parser.max_document_bytes
        owner, after_blank = 0, True
        while True:
            here = _stratum_at(max(0, position() - 1), self.size, self.strata)
            line = read_line(stream, limit)
            if line is END:
                return
            blank = line is not None and not line.strip()
            if not self.format.spans_lines or blank or after_blank:
                owner = here
            after_blank = blank
            yield owner, line


class Spill:
    """The lines one pass over the streams extracted, in a temporary file, each stratum's lines one contiguous block
    (strata are extracted in their order), kept until the pass reads them in spread order."""

    _LENGTH = struct.Struct("<q")

    def __init__(self) -> None:
        self.file = tempfile.TemporaryFile()  # noqa: SIM115 (closed by close(), when the sample is done)
        self.blocks: dict[int, tuple[int, int]] = {}

    def clear(self) -> None:
        self.file.seek(0)
        self.file.truncate()
        self.blocks.clear()

    def add(self, k: int, line: Line) -> None:
        start = self.blocks.get(k, (self.file.tell(), 0))[0]
        self.file.write(self._LENGTH.pack(-1 if line is None else len(line)))
        if line is not None:
            self.file.write(line)
        self.blocks[k] = (start, self.file.tell())

    def lines(self, k: int) -> Iterator[Line]:
        if k not in self.blocks:
            return
        start, end = self.blocks[k]
        self.file.seek(start)
        data = self.file.read(end - start)
        self.file.seek(0, 2)
        offset = 0
        while offset < len(data):
            (length,) = self._LENGTH.unpack_from(data, offset)
            offset += self._LENGTH.size
            if length < 0:
                yield None
            else:
                yield data[offset : offset + length]
                offset += length

    def close(self) -> None:
        self.file.close()
