"""Parquet: one document per row, in the string column `text_field`; a shard's strata are slices of its row groups,
read through pyarrow one row group at a time, the text column only."""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from train_entry.data.corpus import CorpusError
from train_entry.data.corpus_formats.base import CorpusFormat, Shard
from train_entry.data.documents import DocumentParser
from train_entry.data.shard_bytes import HEAD_BYTES, Codec, looks_like
from train_entry.data.shards import stratum_start

MAX_SLICES_PER_ROW_GROUP = 16
"""A Parquet row group is decoded whole to read any slice of it; this bounds how often one is decoded."""
_MAGIC = b"PAR1"
"""A Parquet file starts and ends with it."""


class Parquet(CorpusFormat):
    name = "parquet"
    label = "Parquet"
    suffixes = frozenset({".parquet"})
    unit = "rows"
    compressible = False

    def check(self, path: Path, codec: Codec) -> None:
        with path.open("rb") as stream:
            head = stream.read(HEAD_BYTES)
            stream.seek(max(0, path.stat().st_size - len(_MAGIC)))
            tail = stream.read(len(_MAGIC))
        if not (head.startswith(_MAGIC) and tail == _MAGIC):
            raise CorpusError(f"{path}: named .parquet but it is not a Parquet file (it looks like {looks_like(head)})")

    def open(self, path: Path, codec: Codec, *, stratum_bytes: int, parser: DocumentParser) -> Shard:
        return ParquetShard(path, stratum_bytes=stratum_bytes, parser=parser)

    def expected(self, text_field: str) -> str:
        return f'Parquet with a string column "{text_field}" (the corpus\'s text_field in the spec)'


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
        return _documents(self.parser.counted(self._cells(group, first, end)), self.parser)

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


def _documents(cells: Iterable[object], parser: DocumentParser) -> Iterator[str]:
    stats = parser.stats
    for cell in cells:
        if cell is None:
            stats.skipped_empty += 1
        elif not isinstance(cell, str):
            stats.skipped_malformed += 1
        elif len(cell.encode("utf-8", "surrogatepass")) > parser.max_document_bytes:
            stats.skipped_oversized += 1
        elif cell.strip():
            yield parser.count(cell)
        else:
            stats.skipped_empty += 1


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
                stratum_start(i + 1, stored, count) - stratum_start(i, stored, count),
            )
