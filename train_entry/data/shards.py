"""One corpus file cut into strata of about equal stored bytes; a stratum's documents are those that start in it.

Every document starts in exactly one stratum, so reading every stratum reads every document once, and reading
some reads each document with the same chance whatever its length. A plain file is read a stratum at a time by
seeking to its first byte; a compressed stream cannot be entered in the middle, so one pass over it extracts the
strata asked for (placed by compressed offset, to within a read chunk) into a spill file; Parquet's strata are
slices of its row groups, read through pyarrow one row group at a time.
"""

from __future__ import annotations

import codecs
import enum
import math
import struct
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from train_entry.data.corpus import CorpusError
from train_entry.data.documents import DocumentParser, Line
from train_entry.data.formats import (
    DECOMPRESSION_ERRORS,
    HEAD_BYTES,
    Layout,
    ShardFormat,
    check_text_head,
    corrupt,
    open_stream,
)

_SKIP_CHUNK = 1 << 20
"""Bytes read at a time while passing over the rest of an oversized line."""
_STREAM_CHUNK = 1 << 14
"""Compressed bytes a decompressor takes at a time: how finely a stream's lines are placed in strata."""
_SPACE = b" \t\r\x0b\x0c"
"""ASCII whitespace but the newline: what bytes.strip() removes from a blank line."""
MAX_SLICES_PER_ROW_GROUP = 16
"""A Parquet row group is decoded whole to read any slice of it; this bounds how often one is decoded."""


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


def _start(k: int, size: int, strata: int) -> int:
    return k * size // strata


def _stratum_at(offset: int, size: int, strata: int) -> int:
    """The stratum holding byte `offset`: the largest k whose start is at or before it."""
    return min(strata - 1, ((offset + 1) * strata - 1) // size)


class TextShard:
    """A seekable JSONL or plain-text file; stratum k is the bytes [k * size // strata, (k + 1) * size // strata)."""

    def __init__(self, path: Path, fmt: ShardFormat, *, stratum_bytes: int, parser: DocumentParser) -> None:
        self.path = path
        self.size = path.stat().st_size
        self.strata = _strata(self.size, stratum_bytes)
        self.parser = parser
        self.plain = fmt.layout is Layout.TEXT
        self._file: BinaryIO | None = None

    @property
    def file(self) -> BinaryIO:
        """Opened at the first read and kept until released: a corpus of many shards holds few open."""
        if self._file is None:
            self._file = self.path.open("rb")
        return self._file

    def span(self, k: int) -> int:
        return _start(k + 1, self.size, self.strata) - _start(k, self.size, self.strata)

    def read(self, k: int) -> Iterator[str]:
        start, end = _start(k, self.size, self.strata), _start(k + 1, self.size, self.strata)
        lines = self._plain_lines(start, end) if self.plain else self._jsonl_lines(start, end)
        return self.parser.lines(lines)

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None

    def _jsonl_lines(self, start: int, end: int) -> Iterator[Line]:
        position = self._seek_line_start(start)
        limit = self.parser.max_document_bytes
        while position < end and (line := read_line(self.file, limit)) is not END:
            yield line
            position = self.file.tell()

    def _plain_lines(self, start: int, end: int) -> Iterator[Line]:
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

    def __init__(self, path: Path, fmt: ShardFormat, *, stratum_bytes: int, parser: DocumentParser) -> None:
        self.path = path
        self.fmt = fmt
        self.size = path.stat().st_size
        self.strata = _strata(self.size, stratum_bytes)
        self.parser = parser
        self.plain = fmt.layout is Layout.TEXT

    def span(self, k: int) -> int:
        return _start(k + 1, self.size, self.strata) - _start(k, self.size, self.strata)

    def extract(self, wanted: set[int], keep: Callable[[int, Line], None]) -> None:
        """One pass over the stream, handing keep(k, line) the lines of the wanted strata (up to the last of them)."""
        last = max(wanted)
        with self.path.open("rb") as raw:
            try:
                stream, counting = open_stream(raw, self.fmt.codec, chunk=_STREAM_CHUNK)
                with stream:
                    check_text_head(self.path, stream.peek(HEAD_BYTES)[:HEAD_BYTES], self.fmt, decompressed=True)
                    if stream.peek(len(codecs.BOM_UTF8)).startswith(codecs.BOM_UTF8):
                        stream.read(len(codecs.BOM_UTF8))
                    for owner, line in self._owned_lines(stream, lambda: counting.position):
                        if owner > last:
                            break
                        if owner in wanted:
                            keep(owner, line)
            except DECOMPRESSION_ERRORS as error:
                raise corrupt(self.path, self.fmt.codec, error) from None

    def documents(self, lines: Iterable[Line]) -> Iterator[str]:
        """The documents of one stratum's extracted lines."""
        return self.parser.lines(lines)

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
            if not self.plain or blank or after_blank:
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


class ParquetShard:
    """A Parquet file; its strata are slices of its row groups, about stratum_bytes of stored bytes each."""

    def __init__(self, path: Path, *, stratum_bytes: int, parser: DocumentParser) -> None:
        self.path = path
        self.parser = parser
        try:
            metadata = pq.read_metadata(path)
        except (pa.ArrowException, OSError) as error:
            raise CorpusError(f"{path}: not a readable Parquet file ({error})") from None
        self.column = _text_column(path, metadata.schema.to_arrow_schema(), parser.text_field)
        self.slices = list(_slices(metadata, stratum_bytes))
        """(row group, first row, end row, stored bytes) of each stratum."""
        self.strata = len(self.slices)
        self.size = sum(stored for *_, stored in self.slices)
        self._file: pq.ParquetFile | None = None
        self._decoded: tuple[int, pa.ChunkedArray] | None = None

    def span(self, k: int) -> int:
        return self.slices[k][3]

    def read(self, k: int) -> Iterator[str]:
        group, first, end, _ = self.slices[k]
        return self.parser.cells(self._cells(group, first, end))

    def release(self) -> None:
        if self._file is not None:
            self._file.close()
        self._file, self._decoded = None, None

    def _cells(self, group: int, first: int, end: int) -> Iterable[object]:
        try:
            if self._decoded is None or self._decoded[0] != group:
                if self._file is None:
                    self._file = pq.ParquetFile(self.path)
                self._decoded = (group, self._file.read_row_group(group, columns=[self.column]).column(0))
            return self._decoded[1].slice(first, end - first).to_pylist()
        except (pa.ArrowException, OSError) as error:
            raise CorpusError(f"{self.path}: row group {group} of this Parquet file cannot be read ({error})") from None
        except UnicodeDecodeError:  # a Parquet string is UTF-8 by its format: a byte that is not is damage
            raise CorpusError(
                f"{self.path}: row group {group} of this Parquet file holds a string that is not UTF-8: the file is "
                "damaged"
            ) from None


def _text_column(path: Path, schema: pa.Schema, name: str) -> str:
    if name not in schema.names:
        raise CorpusError(
            f"{path}: no column {name!r} in this Parquet file (its columns: {', '.join(schema.names)}); "
            f"set the corpus's text_field to the column holding the text"
        )
    kind = schema.field(name).type
    if not (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_string_view(kind)):
        raise CorpusError(f"{path}: Parquet column {name!r} holds {kind}, not strings; name a text column (text_field)")
    return name


def _slices(metadata: pq.FileMetaData, stratum_bytes: int) -> Iterator[tuple[int, int, int, int]]:
    for group in range(metadata.num_row_groups):
        row_group = metadata.row_group(group)
        rows = row_group.num_rows
        stored = sum(row_group.column(c).total_compressed_size for c in range(row_group.num_columns))
        count = min(MAX_SLICES_PER_ROW_GROUP, rows, max(1, math.ceil(stored / stratum_bytes)))
        for i in range(count):
            yield (
                group,
                i * rows // count,
                (i + 1) * rows // count,
                _start(i + 1, stored, count) - _start(i, stored, count),
            )
