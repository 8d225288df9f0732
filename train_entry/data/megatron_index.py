"""A Megatron .idx read as untrusted input: its header, counts, dtype and offsets checked against its .bin.

megatron-core maps an index as it finds it and only asserts on its magic: a truncated or lying .idx becomes a
numpy error deep in a trial, a float .bin a cast error, a bad pointer garbage tokens. A team's prefixes are
copied, merged and renamed by hand, so every number the index states is checked here first, in bounded memory,
and an inconsistency is a CorpusError naming the file and what does not add up.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from train_entry.data.corpus import CorpusError

MAGIC = b"MMIDIDX\x00\x00"
HEADER = struct.Struct("<9sQBQQ")
"""magic, version, dtype code, sequence count, document count: the head of a megatron-core .idx file."""
TOKEN_DTYPES: dict[int, type[np.integer]] = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    8: np.uint16,
}
"""megatron-core's DType codes that hold token ids; 6 (float64) and 7 (float32) exist but hold no ids."""
FLOAT_CODES = {6: "float64", 7: "float32"}
_CHUNK = 1 << 20
"""Sequences checked at once: 12 MiB of lengths and pointers, whatever the prefix's size."""


@dataclass(frozen=True)
class IndexHeader:
    dtype: type[np.integer]
    sequences: int
    documents: int

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def lengths_offset(self) -> int:
        return HEADER.size

    @property
    def pointers_offset(self) -> int:
        return HEADER.size + 4 * self.sequences

    @property
    def documents_offset(self) -> int:
        return HEADER.size + 12 * self.sequences

    @property
    def index_bytes(self) -> int:
        return HEADER.size + 12 * self.sequences + 8 * self.documents


def check_index(idx: Path, data: Path) -> IndexHeader:
    """The .idx's header once the whole index is shown to describe `data`: CorpusError naming the file and the
    first inconsistency (size, dtype, counts, a length, a pointer, a document boundary)."""
    header = read_header(idx)
    size = idx.stat().st_size
    if size != header.index_bytes:
        raise CorpusError(
            f"{idx}: {size:,} bytes where its header's {header.sequences:,} sequences and {header.documents:,} "
            f"document boundaries need {header.index_bytes:,}: truncated, or its counts are wrong"
        )
    if header.sequences == 0:
        raise CorpusError(f"{idx}: holds no sequence (its header says 0): nothing to train on; name another prefix")
    _check_documents(idx, header)
    end = _check_pointers(idx, header)
    stored = data.stat().st_size
    if stored != end:
        raise CorpusError(
            f"{data}: {stored:,} bytes where its index describes {end:,} ({idx.name}): not the pair, or truncated"
        )
    return header


def read_header(idx: Path) -> IndexHeader:
    with idx.open("rb") as stream:
        head = stream.read(HEADER.size)
    if len(head) < HEADER.size or not head.startswith(MAGIC):
        raise CorpusError(f"{idx}: not a Megatron index (its first bytes are not {MAGIC!r})")
    _, version, code, sequences, documents = HEADER.unpack(head)
    if version != 1:
        raise CorpusError(f"{idx}: a Megatron index of version {version}; megatron-core reads version 1")
    if code in FLOAT_CODES:
        raise CorpusError(
            f"{idx}: its tokens are stored as {FLOAT_CODES[code]}, not integer token ids; token ids are one of "
            f"{', '.join(np.dtype(t).name for t in TOKEN_DTYPES.values())} (megatron-core's preprocessing writes "
            "uint16 or int32)"
        )
    if code not in TOKEN_DTYPES:
        raise CorpusError(f"{idx}: dtype code {code} is none of megatron-core's (1-8)")
    return IndexHeader(TOKEN_DTYPES[code], sequences, documents)


def _check_documents(idx: Path, header: IndexHeader) -> None:
    """Document boundaries: from 0, never decreasing, ending at the sequence count, as megatron-core's builder
    writes them (its GPT dataset indexes documents by them)."""
    if header.documents < 2:
        raise CorpusError(f"{idx}: {header.documents} document boundaries; a dataset of sequences has at least 2")
    bounds = np.memmap(idx, dtype="<i8", mode="r", offset=header.documents_offset, shape=(header.documents,))
    if bounds[0] != 0 or bounds[-1] != header.sequences:
        raise CorpusError(
            f"{idx}: its {header.documents:,} document boundaries run from {int(bounds[0])} to {int(bounds[-1])}; "
            f"they must run from 0 to its {header.sequences:,} sequences"
        )
    for start in range(0, header.documents, _CHUNK):
        chunk = np.asarray(bounds[max(start - 1, 0) : start + _CHUNK])
        steps = np.flatnonzero(np.diff(chunk) < 0)
        if steps.size:
            at = max(start - 1, 0) + int(steps[0]) + 1
            raise CorpusError(f"{idx}: document boundary {at:,} ({int(bounds[at])}) is before the one preceding it")


def _check_pointers(idx: Path, header: IndexHeader) -> int:
    """Each sequence's length non-negative and its pointer where the one before it ends, as megatron-core's builder
    writes them; the byte where the last one ends."""
    count = header.sequences
    lengths = np.memmap(idx, dtype="<i4", mode="r", offset=header.lengths_offset, shape=(count,))
    pointers = np.memmap(idx, dtype="<i8", mode="r", offset=header.pointers_offset, shape=(count,))
    end = 0
    for start in range(0, count, _CHUNK):
        sizes = np.asarray(lengths[start : start + _CHUNK], dtype=np.int64)
        negative = np.flatnonzero(sizes < 0)
        if negative.size:
            at = start + int(negative[0])
            raise CorpusError(f"{idx}: sequence {at:,} has length {int(lengths[at])}; a length is >= 0")
        expected = end + np.concatenate(([0], np.cumsum(sizes[:-1]))) * header.itemsize
        wrong = np.flatnonzero(np.asarray(pointers[start : start + _CHUNK]) != expected)
        if wrong.size:
            at = start + int(wrong[0])
            raise CorpusError(
                f"{idx}: sequence {at:,} starts at byte {int(pointers[at]):,} of the .bin, where the sequences "
                f"before it end at {int(expected[wrong[0]]):,}: a bad pointer or length"
            )
        end = int(expected[-1]) + int(sizes[-1]) * header.itemsize
    return end
