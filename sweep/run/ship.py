"""`sweep base SPEC --ship DIR`: the spec's built-in base pretrained afresh on the CPU from its corpora, written to
DIR with the manifest that sweep.run.shipped_base checks. The shipped data/tiny-llama is made by

    .venv/bin/sweep base search_spaces/lr_mix.yaml --ship data/tiny-llama

Nothing cached or shipped is reused (the tokenizer, the corpora's samples and the base are built in a scratch
cache), so the files are what the corpora and the recipe give, bit for bit on the same CPU kernels.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

import torch
import transformers

from sweep.files.compat import SHIPPED_BASE
from sweep.files.config_file import SpecError
from sweep.files.records import write_model
from sweep.run.prepare import Prepared, prepare
from sweep.run.shipped_base import (
    SHIPPED_FILES,
    CorpusFile,
    ShippedManifest,
    check_files,
    file_sha256,
    general_side,
    recipe,
    recipe_sha256,
)
from sweep.spec.spec import BUILTIN_BASE, SweepSpec
from train_entry.builtin_base import MANIFEST, SHIPPED_DIR
from train_entry.data.corpus import Corpus

SHIP_THREADS = 1
"""torch threads while pretraining. A CPU's float sums depend on how they are split between threads; on one they
are not split, so any machine with the manifest's torch and CPU kernels reproduces the files bit for bit, whatever
its number of cores (and a busy machine does not stall a thread waiting for another)."""
PROJECT = SHIPPED_DIR.parents[1]


class ShipError(SpecError):
    """The spec cannot make a shipped base, or DIR cannot take one; the message says which and what to do (a
    SpecError, so the CLI says it in one line with exit code 2 without importing this module)."""


def ship_base(spec: SweepSpec, spec_path: Path, directory: Path) -> ShippedManifest:
    """Pretrains the spec's built-in base from scratch and replaces `directory` with it and its manifest."""
    _check_spec(spec)
    _check_target(directory)  # before minutes of pretraining
    if torch.cuda.is_available():
        raise ShipError(
            "the shipped base is made on the CPU, where it reproduces bit for bit: set CUDA_VISIBLE_DEVICES="
        )
    threads = torch.get_num_threads()
    torch.set_num_threads(SHIP_THREADS)
    try:
        with tempfile.TemporaryDirectory(prefix="cpt-sweep-ship-") as scratch:
            return write_shipped(spec, spec_path, prepare(spec, shipped=None, root=Path(scratch)), directory)
    finally:
        torch.set_num_threads(threads)


def write_shipped(spec: SweepSpec, spec_path: Path, prepared: Prepared, directory: Path) -> ShippedManifest:
    """Replaces `directory` with the prepared built-in base, its tokenizer and their manifest."""
    _check_spec(spec)
    _check_target(directory)
    manifest = _manifest(spec, prepared, command=f"sweep base {_shown(spec_path)} --ship {_shown(directory)}")
    _replace(directory, prepared.base_dir, manifest)
    return manifest


def _check_spec(spec: SweepSpec) -> None:
    if not spec.base.is_builtin or spec.base.tokenizer is not None:
        raise ShipError(f"only {BUILTIN_BASE} with its own tokenizer ships: the spec's base.model is {spec.base.model}"
                        + (", with base.tokenizer set" if spec.base.tokenizer is not None else ""))  # fmt: skip
    for name, corpus in general_side(spec).items():
        if corpus.prefixes() is not None or len(corpus.shards()) != 1:
            raise ShipError(f"data.{name} ({corpus.label}): a shipped base is made from one text file per corpus")


def _check_target(directory: Path) -> None:
    """DIR is replaced whole: it may only be absent, empty or a shipped base, so nothing else in it is lost."""
    if not directory.exists():
        return
    if not directory.is_dir():
        raise ShipError(f"{directory} is not a directory: name a new folder or a shipped base's")
    if others := sorted(path.name for path in directory.iterdir() if path.name not in SHIPPED_FILES | {MANIFEST}):
        raise ShipError(f"{directory} holds {others[0]}, which is no shipped base's file: name a new or empty folder")


def _manifest(spec: SweepSpec, prepared: Prepared, *, command: str) -> ShippedManifest:
    written = json.loads((prepared.base_dir / MANIFEST).read_text())
    produced = sorted(path.name for path in prepared.base_dir.iterdir() if path.name != MANIFEST)
    if unknown := sorted(set(produced) - SHIPPED_FILES):
        raise ShipError(f"pretraining wrote {unknown}, which a shipped base does not hold: update SHIPPED_FILES")
    values = recipe(spec)
    return ShippedManifest(
        model=BUILTIN_BASE,
        command=command,
        recipe=values,
        recipe_sha256=recipe_sha256(values),
        corpora={name: _corpus_file(name, corpus, prepared) for name, corpus in general_side(spec).items()},
        files={name: file_sha256(prepared.base_dir / name) for name in produced},
        built_with={
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(),
            "threads": SHIP_THREADS,
        },
        parameters=written["parameters"],
        final=written["final"],
    )


def _corpus_file(name: str, corpus: Corpus, prepared: Prepared) -> CorpusFile:
    stats = prepared.corpus_stats[name]
    if stats.share < 1.0:
        raise ShipError(
            f"data.{name}'s sample covers {stats.share:.0%} of {corpus.label}: a shipped base is made from whole "
            f"corpora; raise data.sample.min_tokens above its {stats.tokens:,} tokens"
        )
    (path,) = corpus.shards()
    return CorpusFile(path=_shown(path), bytes=path.stat().st_size, sha256=file_sha256(path), tokens=stats.tokens)


def _shown(path: Path) -> str:
    """Relative to the project when inside it: the manifest says the same wherever the project is checked out."""
    path = path.resolve()
    return str(path.relative_to(PROJECT)) if path.is_relative_to(PROJECT) else str(path)


def _replace(directory: Path, base_dir: Path, manifest: ShippedManifest) -> None:
    """Writes the files and the manifest beside `directory` and renames them into its place."""
    directory = directory.resolve()
    directory.parent.mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix=f".{directory.name}.", suffix=".ship", dir=directory.parent))
    old = directory.parent / f".{directory.name}.{os.getpid()}.old"
    try:
        for name in manifest.files:
            shutil.copyfile(base_dir / name, staged / name)
        write_model(staged / MANIFEST, manifest, SHIPPED_BASE)
        check_files(staged, manifest)
        if directory.exists():
            directory.rename(old)
        try:
            staged.rename(directory)
        except OSError:
            if old.exists():
                old.rename(directory)
            raise
    finally:
        shutil.rmtree(staged, ignore_errors=True)
        shutil.rmtree(old, ignore_errors=True)
