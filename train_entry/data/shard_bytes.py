"""A shard's bytes whatever its corpus format: its codec from its name, the magic numbers that say what a file
really is, and its decompressed stream.

A name promises a format; the file's first bytes (its magic number) say which it really is. A file that is
not what its name says, or a binary format this pipeline does not read, is refused naming both, so its bytes
never become "text". Compressed streams are opened here too, with the decompressor's failures (a truncated
or corrupt file) turned into one CorpusError naming the file and the codec. The corpus formats themselves
(JSONL, plain text, Parquet) are train_entry.data.corpus_formats.
"""

from __future__ import annotations

import bz2
import enum
import gzip
import io
import lzma
import zlib
from pathlib import Path
from typing import BinaryIO

import zstandard

from train_entry.data.corpus import CorpusError


class Codec(enum.Enum):
    NONE = "none"
    GZIP = "gzip"
    BZIP2 = "bzip2"
    XZ = "xz"
    ZSTD = "zstd"


CODEC_SUFFIXES = {".gz": Codec.GZIP, ".bz2": Codec.BZIP2, ".xz": Codec.XZ, ".zst": Codec.ZSTD, ".zstd": Codec.ZSTD}
UNREAD_SUFFIXES = {
    ".lz4": "lz4 -d",
    ".br": "brotli -d",
    ".zip": "unzip",
    ".tar": "tar -xf",
    ".7z": "7z x",
    ".arrow": "a Parquet or JSONL copy (datasets' to_parquet / to_json)",
    ".bin": "the prefix without .bin/.idx",
    ".idx": "the prefix without .bin/.idx",
}
"""Suffixes of formats not read here, and what to give instead."""

# Magic numbers, longest first where one is a prefix of another.
_MAGIC = (
    (b"\x1f\x8b", "gzip"),
    (b"BZh", "bzip2"),
    (b"\xfd7zXZ\x00", "xz"),
    (b"\x28\xb5\x2f\xfd", "zstd"),
    (b"\x04\x22\x4d\x18", "lz4"),
    (b"PAR1", "Parquet"),
    (b"MMIDIDX\x00\x00", "a Megatron index (.idx)"),
    (b"ARROW1", "Arrow IPC"),
    (b"PK\x03\x04", "zip"),
    (b"7z\xbc\xaf\x27\x1c", "7z"),
    (b"SQLite format 3\x00", "SQLite"),
    (b"%PDF", "PDF"),
    (b"\x89PNG", "PNG"),
    (b"\x7fELF", "an ELF executable"),
    (b"\x93NUMPY", "a NumPy array"),
)
CODEC_MAGIC = {Codec.GZIP: "gzip", Codec.BZIP2: "bzip2", Codec.XZ: "xz", Codec.ZSTD: "zstd"}
HEAD_BYTES = 16
"""Bytes read to recognise a format: the longest magic number above."""


def magic_format(head: bytes) -> str | None:
    """The binary format whose magic number starts `head`, if any (UTF-16: a byte-order mark, then NUL bytes)."""
    if head[:2] in (b"\xff\xfe", b"\xfe\xff") and b"\x00" in head[2:8]:
        return "UTF-16 text"
    return next((name for magic, name in _MAGIC if head.startswith(magic)), None)


def looks_like(head: bytes) -> str:
    """What the first bytes of a file look like: a binary format's name, or "JSON lines", "text", "binary data"."""
    known = magic_format(head)
    if known is not None:
        return known
    if head.lstrip(b"\xef\xbb\xbf \t\r\n").startswith((b"{", b"[")):
        return "JSON lines"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as error:
        return "text" if error.start >= len(head) - 3 else "binary data"  # a character cut by the head's end is text
    return "text"


def check_text_head(path: Path, head: bytes, label: str, *, decompressed: bool = False) -> None:
    """Raises CorpusError when what should be text (in the format `label` names) starts with a binary format's magic
    number.

    Text that is merely not UTF-8 is no error here: its lines are counted as they are read.
    """
    seen = magic_format(head)
    if seen is None:
        return
    if decompressed:
        raise CorpusError(f"{path}: decompresses to {seen} data, not {label}; give JSONL, plain text or Parquet")
    magic = f"magic bytes {head[:4].hex(' ')}"
    if seen in _COMPRESSED_NAMES:
        suffix = _COMPRESSED_NAMES[seen]
        what = f"looks compressed ({seen} {magic}), not {label}; name it {path.name}{suffix} if it is"
    elif seen == "Parquet":
        what = f"looks like Parquet ({magic}), not {label}; name it {path.stem}.parquet"
    else:
        what = f"looks like {seen} ({magic}), not {label}; give JSONL, plain text or Parquet"
    raise CorpusError(f"{path}: {what}")


_COMPRESSED_NAMES = {"gzip": ".gz", "bzip2": ".bz2", "xz": ".xz", "zstd": ".zst", "lz4": ".lz4"}


class _Counting(io.RawIOBase):
    """The compressed file as a decompressor reads it, counting the bytes handed over.

    A read returns at most `chunk` bytes, so that what comes out of the decompressor can be placed
    in the compressed file to within a chunk (which is how a stream's documents are put in strata).
    """

    def __init__(self, raw: BinaryIO, chunk: int) -> None:
        self.raw = raw
        self.chunk = chunk
        self.position = 0

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        data = self.raw.read(min(len(buffer), self.chunk))
        buffer[: len(data)] = data
        self.position += len(data)
        return len(data)


class _Zstd(io.RawIOBase):
    """zstd frames one after another, decompressed in bounded pieces; a stream cut inside a frame is an EOFError.

    The zstandard package's stream reader ends quietly where the file does, even inside a frame, so
    a truncated shard would pass as a shorter one; this reader checks that the last frame ended.
    """

    _FEED = 4096
    """Compressed bytes fed at a time: bounds what one call can inflate to."""

    def __init__(self, source: io.RawIOBase) -> None:
        self.source = source
        self.decompressor = zstandard.ZstdDecompressor().decompressobj()
        self.pending = b""
        self.fed = False
        self.out = memoryview(b"")

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        while not self.out:
            if not self.pending:
                self.pending = self.source.read(self._FEED)
                if not self.pending:
                    if self.fed and not self.decompressor.eof:
                        raise EOFError("the file ends inside a zstd frame")
                    return 0
            data, self.pending = self.pending[: self._FEED], self.pending[self._FEED :]
            if self.decompressor.eof:  # the next frame
                self.decompressor = zstandard.ZstdDecompressor().decompressobj()
            self.out = memoryview(self.decompressor.decompress(data))
            self.fed = True
            if self.decompressor.eof:
                self.pending = self.decompressor.unused_data + self.pending
        size = min(len(buffer), len(self.out))
        buffer[:size] = self.out[:size]
        self.out = self.out[size:]
        return size


DECOMPRESSION_ERRORS = (EOFError, OSError, zlib.error, lzma.LZMAError, zstandard.ZstdError)
"""What the decompressors raise on a truncated or corrupt stream (gzip.BadGzipFile is an OSError)."""


def open_stream(raw: BinaryIO, codec: Codec, *, chunk: int) -> tuple[BinaryIO, _Counting]:
    """The decompressed stream of an open compressed file, and the counter of compressed bytes read so far."""
    counting = _Counting(raw, chunk)
    # The caller closes the stream (a `with` around its use): it is returned open.
    if codec is Codec.GZIP:
        stream: BinaryIO = gzip.GzipFile(fileobj=counting, mode="rb")
    elif codec is Codec.BZIP2:
        stream = bz2.BZ2File(counting)
    elif codec is Codec.XZ:
        stream = lzma.LZMAFile(counting)  # noqa: SIM115
    elif codec is Codec.ZSTD:
        stream = io.BufferedReader(_Zstd(counting))
    else:
        raise ValueError(f"{codec=} is not a compression")
    return stream, counting


def corrupt(path: Path, codec: Codec, error: BaseException) -> CorpusError:
    return CorpusError(
        f"{path}: the {codec.value} stream is truncated or corrupt ({type(error).__name__}: {error}); "
        f"check the file (e.g. `{_TEST_COMMAND[codec]} {path.name}`) or copy it again"
    )


_TEST_COMMAND = {Codec.GZIP: "gzip -t", Codec.BZIP2: "bzip2 -t", Codec.XZ: "xz -t", Codec.ZSTD: "zstd -t"}
