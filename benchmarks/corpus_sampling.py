"""Corpus preparation time against corpus size: the default spec's domain sample of a 50 MB to 50 GB JSONL corpus.

What a sweep prepares of a corpus is its sample (sweep/run/sample_size.py): for the default spec's domain corpus,
4 M tokens whatever the corpus's size. This times what `sweep run` does before its first trial for that corpus
(the fingerprint for the cache key, then the sample tokenised with the default 4096-token BPE into an indexed
dataset, in a fresh cache) for plain JSONL of each size, and for comparison the whole 50 MB file tokenised as
before sampling, zstd JSONL (a stream: decompressed through to its last sampled stratum) and Parquet.

Corpora are made of one 64 MiB block of generated listings repeated, all before any is timed; each size and
format is then prepared --rounds times, all interleaved, and the median reported. Up to --dense-gb a corpus is
a real file; above it, a sparse file of that size holding data only in the strata the sample reads (computed
with the sampler's own stratum_bytes and spread_order, with room for a document running past a stratum's end),
so a 50 GB corpus costs ~130 MB of disk. A sampled stratum that touched a hole would read as NUL bytes, counted
malformed or oversized: the benchmark fails if any document was skipped. Every file is dropped from the page
cache before it is timed (posix_fadvise DONTNEED), and all are removed at the end.

    .venv/bin/python benchmarks/corpus_sampling.py [--sizes-gb 0.05 0.5 5 50] [--dense-gb 5] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import zstandard

from sweep.run.sample_size import sample_tokens
from sweep.spec.spec import load_spec
from train_entry.data.corpus import DEFAULT_MAX_DOCUMENT_BYTES, Corpus
from train_entry.data.fingerprint import corpus_fingerprint
from train_entry.data.indexed import BYTES_PER_TOKEN_GUESS, build_indexed
from train_entry.data.sample import CorpusSample, spread_order, stratum_bytes
from train_entry.data.tokenizer import train_bpe

REPO = Path(__file__).resolve().parents[1]
BLOCK_BYTES = 64 << 20
STRATA_WRITTEN = 1024
"""Strata of a sparse corpus given data, in spread order: several times what a 4 M-token sample reads."""
SPARSE_MARGIN = 64 << 10
"""Data beyond a written stratum's end: the last document that starts in it is read to its own end."""


def listing_block(seed: int = 0) -> bytes:
    """BLOCK_BYTES of JSONL listings: words of the bundled e-commerce corpus, 50 to 3000 a document."""
    words = sorted(
        {word for line in (REPO / "data/ecommerce/train.jsonl").open() for word in json.loads(line)["text"].split()}
    )
    rng = random.Random(seed)
    lines, size = [], 0
    while size < BLOCK_BYTES:
        line = (json.dumps({"text": " ".join(rng.choices(words, k=rng.randint(50, 3000)))}) + "\n").encode()
        lines.append(line)
        size += len(line)
    return b"".join(lines)[:BLOCK_BYTES].rsplit(b"\n", 1)[0] + b"\n"


def dense_corpus(path: Path, size: int, block: bytes) -> None:
    with path.open("wb") as out:
        written = 0
        while written < size:
            piece = block[: size - written] if size - written < len(block) else block
            out.write(piece if piece.endswith(b"\n") else piece.rsplit(b"\n", 1)[0] + b"\n")
            written += len(piece)


def sparse_corpus(path: Path, size: int, block: bytes, max_tokens: int) -> int:
    """A sparse file of `size` bytes with data in the first STRATA_WRITTEN strata of the sample's spread order;
    returns the bytes written."""
    stratum = stratum_bytes(max_tokens * BYTES_PER_TOKEN_GUESS)
    count = -(-size // stratum)
    written = 0
    with path.open("wb") as out:
        out.truncate(size)
        for rank, k in enumerate(spread_order(count)):
            if rank == STRATA_WRITTEN:
                break
            start, end = k * size // count, min(size, (k + 1) * size // count + SPARSE_MARGIN)
            offset = start % (len(block) - (end - start) - 1)
            out.seek(max(0, start - 1))
            out.write(block[offset : offset + end - max(0, start - 1)])
            written += end - start
    return written


def evict(path: Path) -> None:
    """Drops the file's pages from the page cache, so that it is read from disk as a corpus seen first is."""
    with path.open("rb") as stream:
        os.fsync(stream.fileno())  # dirty pages are not dropped
        os.posix_fadvise(stream.fileno(), 0, 0, os.POSIX_FADV_DONTNEED)


def prepare_once(corpus: Corpus, tokenizer: Path, max_tokens: int | None, scratch: Path) -> dict:
    """One preparation in a fresh cache, timed; then, from a cold cache again, reading the same strata alone."""
    cache = Path(tempfile.mkdtemp(dir=scratch))
    started = time.perf_counter()
    corpus_fingerprint(corpus.shards())
    keyed = time.perf_counter()
    built = build_indexed(corpus, tokenizer, cache, max_tokens=max_tokens)
    done = time.perf_counter()
    shutil.rmtree(cache)
    stats = built.stats
    return {
        "seconds": done - started,
        "key_seconds": keyed - started,
        "read_seconds": read_only(corpus, max_tokens, stats.sampled_bytes),
        "documents": stats.documents,
        "tokens": stats.tokens,
        "share": stats.share,
        "skipped": stats.skipped_malformed + stats.skipped_oversized + stats.skipped_non_utf8,
    }


def read_only(corpus: Corpus, max_tokens: int | None, sampled_bytes: int) -> float:
    """Seconds to read and parse the strata the sample read, without tokenising: the part that depends on the
    corpus's size and format."""
    for path in corpus.shards():
        evict(path)
    expected = max_tokens * BYTES_PER_TOKEN_GUESS if max_tokens else sampled_bytes
    started = time.perf_counter()
    with CorpusSample(corpus, expected_bytes=expected, max_document_bytes=DEFAULT_MAX_DOCUMENT_BYTES) as sample:
        for _ in sample.spread(sampled_bytes):
            pass
    return time.perf_counter() - started


@dataclass(frozen=True)
class Variant:
    """One corpus to prepare: its label, file, bytes on disk, and the sample's tokens (None: the whole corpus)."""

    label: str
    path: Path
    on_disk: int
    max_tokens: int | None


def run(args: argparse.Namespace) -> list[dict]:
    scratch = Path(tempfile.mkdtemp(prefix="corpus-sampling-", dir=args.workdir))
    try:
        spec = load_spec(REPO / "search_spaces" / "lr_mix.yaml")
        max_tokens = sample_tokens(spec)["domain.train"]
        general = [spec.data.general.corpus("train"), spec.data.non_english.corpus("train")]
        tokenizer = train_bpe(general, spec.base.builtin.vocab_size, scratch / "tokenizers")
        block = listing_block()
        variants = []
        for size_gb in args.sizes_gb:
            variants += make_variants(scratch, size_gb, args, block, max_tokens)
        return timed_rounds(variants, args.rounds, tokenizer, scratch)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def make_variants(scratch: Path, size_gb: float, args, block: bytes, max_tokens: int) -> list[Variant]:
    """The JSONL corpus of size_gb (a real file up to --dense-gb, a sparse one above); the smallest also read whole
    as before sampling; up to --stream-gb also as zstd JSONL and as Parquet."""
    size = int(size_gb * 1e9)
    path = scratch / f"listings-{size_gb:g}GB.jsonl"
    if size_gb > args.dense_gb:
        return [
            Variant(f"{size_gb:g} GB JSONL, sparse", path, sparse_corpus(path, size, block, max_tokens), max_tokens)
        ]
    dense_corpus(path, size, block)
    variants = [Variant(f"{size_gb:g} GB JSONL", path, size, max_tokens)]
    if size_gb == min(args.sizes_gb):
        variants.append(Variant(f"{size_gb:g} GB JSONL, whole (as before sampling)", path, size, None))
    if size_gb <= args.stream_gb:
        zstd, parquet = path.with_name(path.name + ".zst"), path.with_suffix(".parquet")
        with path.open("rb") as source, zstd.open("wb") as out:
            zstandard.ZstdCompressor(level=3, threads=-1).copy_stream(source, out)
        texts = [json.loads(line)["text"] for line in path.open()]
        pq.write_table(pa.table({"text": texts}), parquet, row_group_size=2_000)  # ~26 MB row groups
        variants.append(Variant(f"{size_gb:g} GB zstd JSONL", zstd, zstd.stat().st_size, max_tokens))
        variants.append(Variant(f"{size_gb:g} GB Parquet", parquet, parquet.stat().st_size, max_tokens))
    return variants


def timed_rounds(variants: list[Variant], rounds: int, tokenizer: Path, scratch: Path) -> list[dict]:
    """Each variant prepared `rounds` times, all interleaved (order reversed every round) so that a change in the
    shared machine's load falls on every variant alike; the median round of each and the spread."""
    times: list[list[dict]] = [[] for _ in variants]
    order = list(range(len(variants)))
    for _ in range(rounds):
        for index in order:
            variant = variants[index]
            evict(variant.path)
            timed = prepare_once(Corpus.of(variant.path), tokenizer, variant.max_tokens, scratch)
            if timed["skipped"]:
                raise RuntimeError(f"{variant.label}: {timed['skipped']} documents skipped; a sample read a hole")
            times[index].append(timed)
        order.reverse()
    rows = []
    for variant, runs in zip(variants, times):
        seconds = sorted(run["seconds"] for run in runs)
        median = next(run for run in runs if run["seconds"] == statistics.median_low(seconds))
        spread = f" ({seconds[0]:.1f}–{seconds[-1]:.1f})" if len(seconds) > 1 else ""
        rows.append({"corpus": variant.label, "disk": variant.on_disk, **median, "spread": spread})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes-gb", type=float, nargs="+", default=[0.05, 0.5, 5, 50])
    parser.add_argument("--dense-gb", type=float, default=5, help="larger corpora are sparse files")
    parser.add_argument("--stream-gb", type=float, default=0.5, help="zstd and Parquet copies up to this size")
    parser.add_argument("--rounds", type=int, default=3, help="timed preparations of each size, interleaved")
    parser.add_argument("--workdir", default=None, help="where corpora are written (default: the temp folder)")
    rows = run(parser.parse_args())
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f} at the end")
    columns = ["corpus", "on disk", "prepared in (median, min–max)", "of which the key", "reading alone"]
    columns += ["documents", "tokens", "sample of corpus", "skipped"]
    print("| " + " | ".join(columns) + " |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row['corpus']} | {row['disk'] / 1e9:.3g} GB | {row['seconds']:.1f} s{row.get('spread', '')} "
            f"| {row['key_seconds'] * 1e3:.0f} ms | {row['read_seconds']:.2f} s "
            f"| {row['documents']:,} | {row['tokens']:,} | {row['share']:.3%} | {row['skipped']} |"
        )


if __name__ == "__main__":
    main()
