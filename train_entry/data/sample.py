"""A corpus's documents stratum by stratum, in an order whose every prefix is spread evenly over the whole corpus.

The corpus (its shards, one after another) is cut into strata of about equal stored bytes, and the strata are
read in van der Corput order: stratum 0, then the middle, then the quarters, the eighths... (the bit-reversed
rank). A reader that stops once it has enough has read a systematic sample of the corpus, from its start to its
end, never its first megabytes; one that never stops reads every document exactly once. The same corpus and
stratum size always give the same order, so a sample is a deterministic function of the corpus and its size.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Self

from train_entry.data.corpus import Corpus, CorpusError, CorpusStats
from train_entry.data.corpus_formats import check_format, declared_format
from train_entry.data.corpus_formats.base import Shard
from train_entry.data.documents import DocumentParser
from train_entry.data.shards import Spill, StreamShard

STRATA_PER_SAMPLE = 256
"""A sample spans about this many strata at least: its documents come from that many places in the corpus."""
MIN_STRATUM_BYTES = 64 << 10
MAX_STRATUM_BYTES = 16 << 20
"""Stratum sizes are kept between these: a seek per 64 KiB at least, at most one per 16 MiB."""


def stratum_bytes(expected_bytes: int) -> int:
    """The stratum size for a sample of about `expected_bytes` of stored text."""
    return min(MAX_STRATUM_BYTES, max(MIN_STRATUM_BYTES, expected_bytes // STRATA_PER_SAMPLE))


def spread_order(count: int) -> Iterator[int]:
    """0 .. count - 1, each once, in van der Corput order: the first 2**k of them are evenly spaced."""
    bits = (count - 1).bit_length() if count > 1 else 0
    for rank in range(1 << bits):
        index = int(format(rank, f"0{bits}b")[::-1], 2) if bits else 0
        if index < count:
            yield index


class CorpusSample:
    """The documents of a corpus, each with its stratum's index, in spread or file order; `stats` counts what was read.

    `expected_bytes` (about how much the caller will read) sets the stratum size and how many strata one pass
    over a compressed stream extracts; the caller may read less or more. Reading the corpus to its end
    with no usable document raises CorpusError, so every consumer fails the same way.
    """

    def __init__(self, corpus: Corpus, *, expected_bytes: int, max_document_bytes: int) -> None:
        self.corpus = corpus
        self.stratum_bytes = stratum_bytes(expected_bytes)
        self.first_pass = 2 * math.ceil(expected_bytes / self.stratum_bytes)
        self.stats = CorpusStats()
        self.parsers: list[DocumentParser] = []
        self.shards: list[Shard] = [self._open(path, max_document_bytes) for path in corpus.shards()]
        self.spill: Spill | None = None
        """What the current pass extracted from the stream shards, keyed by stratum."""
        self.reading: Shard | None = None
        """The shard read last: the only one holding a file open."""
        self.starts = list(itertools.accumulate((shard.strata for shard in self.shards), initial=0))
        self.stats.corpus_bytes = sum(shard.size for shard in self.shards)

    @property
    def strata(self) -> int:
        return self.starts[-1]

    def spread(self, max_bytes: int | None = None) -> Iterator[tuple[int, str]]:
        """(stratum, document) in spread order; with max_bytes, no stratum is begun once the strata read hold that
        many stored bytes."""
        return self._read(self._passes(spread_order(self.strata), self.first_pass), max_bytes)

    def in_order(self) -> Iterator[tuple[int, str]]:
        """(stratum, document) of the whole corpus, in its own order (a stream in one pass)."""
        return self._read(self._passes(range(self.strata), self.strata), None)

    def _read(self, order: Iterator[int], max_bytes: int | None) -> Iterator[tuple[int, str]]:
        for stratum in order:
            if max_bytes is not None and self.stats.sampled_bytes >= max_bytes:
                return
            shard, k = self._locate(stratum)
            if shard is not self.reading:
                if self.reading is not None:
                    self.reading.release()
                self.reading = shard
            self.stats.sampled_bytes += shard.span(k)
            if isinstance(shard, StreamShard):
                documents = shard.documents(self.spill.lines(stratum) if self.spill is not None else ())
            else:
                documents = shard.read(k)
            for document in documents:
                yield stratum, document
        if self.stats.documents == 0:
            raise CorpusError(self.parsers[0].nothing_usable(self.corpus.label))

    def close(self) -> None:
        if self.reading is not None:
            self.reading.release()
        if self.spill is not None:
            self.spill.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _open(self, path: Path, max_document_bytes: int) -> Shard:
        fmt = declared_format(path, self.corpus.format)
        try:
            check_format(path, fmt)
        except OSError as error:
            raise CorpusError(f"{path}: cannot be read ({error.strerror or error})") from None
        parser = DocumentParser(
            fmt.format, text_field=self.corpus.text_field, max_document_bytes=max_document_bytes, stats=self.stats
        )
        self.parsers.append(parser)
        return fmt.format.open(path, fmt.codec, stratum_bytes=self.stratum_bytes, parser=parser)

    def _extract(self, batch: list[int]) -> None:
        """One pass over each stream shard with strata in `batch`, spilling their lines."""
        wanted: dict[int, set[int]] = {}
        for stratum in batch:
            index = bisect.bisect_right(self.starts, stratum) - 1
            if isinstance(self.shards[index], StreamShard):
                wanted.setdefault(index, set()).add(stratum - self.starts[index])
        if not wanted:
            return
        if self.spill is None:
            self.spill = Spill()
        self.spill.clear()
        spill = self.spill
        for index, strata in wanted.items():
            self.shards[index].extract(strata, lambda k, line, start=self.starts[index]: spill.add(start + k, line))

    def _locate(self, stratum: int) -> tuple[Shard, int]:
        index = bisect.bisect_right(self.starts, stratum) - 1
        return self.shards[index], stratum - self.starts[index]

    def _passes(self, order: Iterator[int] | range, first: int) -> Iterator[int]:
        """The strata in `order`, in passes: before each pass, every stream shard extracts its strata in one read.

        Passes double in size, so a sample that needs more than the first costs a few passes over a stream, not
        one per stratum.
        """
        order = iter(order)
        size = max(1, first)
        while batch := list(itertools.islice(order, size)):
            self._extract(batch)
            yield from batch
            size *= 2


def read_documents(corpus: Corpus, *, max_bytes: int | None, max_document_bytes: int) -> Iterator[str]:
    """A corpus's documents: spread over it until about `max_bytes` of stored text are read, or all of it in its
    own order when it holds no more (or max_bytes is None)."""
    corpus_bytes = sum(path.stat().st_size for path in corpus.shards())
    whole = max_bytes is None or max_bytes >= corpus_bytes
    expected = corpus_bytes if whole else max_bytes
    with CorpusSample(corpus, expected_bytes=expected, max_document_bytes=max_document_bytes) as sample:
        for _, document in sample.in_order() if whole else sample.spread(max_bytes):
            yield document
