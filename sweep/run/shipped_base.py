"""The built-in base the project ships (data/tiny-llama): used by a sweep only when its manifest says it is the
spec's built-in base and every file is the one the manifest hashes.

The manifest records the recipe the base was made with (every spec key and tool version that changes what
pretraining writes), the corpora it was made from (each file's size, sha256 and tokens) and the sha256 of every
file of the directory. A spec with another recipe or other corpora gets its base built into the cache as before,
with one line saying why when it is pretrained. The manifest and the files are untrusted input: an unreadable manifest, a missing,
extra or changed file is refused with a warning naming it, and the base is built into the cache instead; only
JSON and safetensors files are ever listed, so nothing shipped is unpickled. sweep.run.ship writes the directory.
"""

from __future__ import annotations

import hashlib
import json
import sys
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints, field_validator

from sweep.files.compat import SHIPPED_BASE
from sweep.files.records import CorruptFile, read_model
from sweep.run.sample_size import sample_tokens
from sweep.spec.spec import BUILTIN_BASE, SweepSpec
from train_entry.builtin_base import MANIFEST, RECIPE_VERSION
from train_entry.config import StrictConfig
from train_entry.data.corpus import Corpus
from train_entry.data.indexed import PIPELINE_VERSION
from train_entry.data.tokenizer import BPE_RECIPE_VERSION, BPE_SAMPLE_BYTES

SHIPPED_FILES = frozenset(
    {"config.json", "generation_config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"}
)
"""What save_pretrained writes for tiny-llama and its tokenizer: JSON and safetensors, nothing a loader unpickles."""
REQUIRED_FILES = frozenset({"config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"})
MAX_MANIFEST_BYTES = 1 << 20
"""A manifest is a few kB; a larger file is not one."""
GENERAL_SIDE = ("general.train", "non_english.train")
"""The corpora the base is made from: its BPE is trained on them and it is pretrained on their blend."""

Sha256 = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{64}$")]
RecipeValue = bool | int | float | str | None


class ShippedBaseError(ValueError):
    """The shipped base cannot be trusted: its manifest or one of its files is missing, unreadable or changed."""


class CorpusFile(StrictConfig):
    """One corpus file the base was made from."""

    path: str = Field(max_length=4096)
    """As the spec named it, relative to the project when inside it: for the reader; files match by content."""
    bytes: int = Field(ge=1)
    sha256: Sha256
    tokens: int = Field(ge=1)
    """Tokens of the whole file (end-of-document tokens included): a spec whose sample of it holds fewer would
    pretrain on part of it."""


class ShippedManifest(StrictConfig):
    """cpt_sweep_base.json of a shipped built-in base."""

    model: Literal["builtin:tiny-llama"]
    command: str = Field(max_length=4096)
    """The command that made the directory."""
    recipe: dict[str, RecipeValue] = Field(max_length=256)
    recipe_sha256: Sha256
    corpora: dict[Literal["general.train", "non_english.train"], CorpusFile]
    files: dict[str, Sha256]
    built_with: dict[str, str | int] = Field(max_length=16)
    """torch version, its CPU kernels and threads: a float sum depends on all three, so the files are reproduced
    bit for bit where they are the same."""
    parameters: int = Field(ge=1)
    final: dict[str, float] = Field(max_length=16)
    """Pretraining's last train loss and tokens seen, the held-out general and domain losses (of the spec that
    made it; every sweep measures the base on its own validation sets)."""

    @field_validator("files")
    @classmethod
    def _only_safe_files(cls, files: dict[str, str]) -> dict[str, str]:
        if unknown := sorted(set(files) - SHIPPED_FILES):
            raise ValueError(f"lists {unknown}; a shipped base holds only {sorted(SHIPPED_FILES)}")
        if missing := sorted(REQUIRED_FILES - set(files)):
            raise ValueError(f"does not list {missing}")
        return files


def recipe(spec: SweepSpec) -> dict[str, RecipeValue]:
    """Everything besides the corpora that decides what pretraining the spec's built-in base writes, by spec key;
    the tool's own recipe versions under `cpt-sweep.*`. The samples' sizes are not here: the corpora's token
    counts stand for them (GENERAL_SIDE corpora read whole)."""
    base, data = spec.base, spec.data
    assert base.builtin is not None, "only a built-in base has a recipe"
    non_english = data.non_english
    return {
        **{f"base.builtin.{key}": value for key, value in base.builtin.model_dump(mode="json").items()},
        "base.max_lr": base.max_lr,
        "data.max_document_bytes": data.max_document_bytes,
        "data.general.text_field": data.general.text_field,
        "data.non_english.text_field": non_english.text_field if non_english else None,
        "data.non_english.share": non_english.share if non_english else 0.0,
        # A named format reads the same files as other documents; none named keeps the shipped manifest's keys.
        **{
            f"data.{side}.format": corpus.format
            for side, corpus in (("general", data.general), ("non_english", non_english))
            if corpus is not None and corpus.format is not None
        },
        "cpt-sweep.pretrain_recipe": RECIPE_VERSION,
        "cpt-sweep.bpe_recipe": BPE_RECIPE_VERSION,
        "cpt-sweep.bpe_sample_bytes": BPE_SAMPLE_BYTES,
        "cpt-sweep.indexed_pipeline": PIPELINE_VERSION,
    }


def recipe_sha256(values: dict[str, RecipeValue]) -> str:
    return hashlib.sha256(json.dumps(values, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def general_side(spec: SweepSpec) -> dict[str, Corpus]:
    """The GENERAL_SIDE corpora the spec names."""
    return {name: corpus for name, corpus in spec.data.corpora().items() if name in GENERAL_SIDE}


def file_sha256(path: Path) -> str:
    with path.open("rb") as stream:
        return hashlib.file_digest(stream, "sha256").hexdigest()


def shipped_base(spec: SweepSpec, directory: Path) -> tuple[Path | None, str]:
    """(`directory`, "") when it holds the spec's built-in base, every file checked against the manifest; else
    (None, why not), said by whoever pretrains the cache's base instead, only if it must (a cached one is silent).
    A damaged directory is also a warning on stderr at once: the project's own files were changed."""
    if not spec.base.is_builtin:
        return None, ""
    try:
        manifest = read_manifest(directory)
        mismatch = spec_mismatch(manifest, spec)
        if mismatch is None:
            check_files(directory, manifest)
            return directory, ""
    except ShippedBaseError as error:
        print(
            f"warning: the shipped {BUILTIN_BASE} is refused: {error}; pretraining it into the cache instead",
            file=sys.stderr,
        )
        return None, f"{BUILTIN_BASE}: the shipped one is refused (see the warning above)"
    return None, f"{BUILTIN_BASE}: not the shipped one ({directory}): {mismatch}; pretraining the cache's (once)"


def read_manifest(directory: Path) -> ShippedManifest:
    """The directory's manifest, checked; ShippedBaseError naming the file when it cannot be trusted."""
    path = directory / MANIFEST
    try:
        manifest = read_model(path, ShippedManifest, fmt=SHIPPED_BASE, max_bytes=MAX_MANIFEST_BYTES)
    except CorruptFile as error:
        raise ShippedBaseError(str(error)) from None
    if recipe_sha256(manifest.recipe) != manifest.recipe_sha256:
        raise ShippedBaseError(f"{path}: its recipe does not hash to its recipe_sha256 (the manifest was changed)")
    return manifest


def spec_mismatch(manifest: ShippedManifest, spec: SweepSpec) -> str | None:
    """Why the shipped base is not the one the spec would pretrain, or None when it is."""
    if spec.base.tokenizer is not None:
        return "base.tokenizer is set, and the shipped base has its own"
    wanted = recipe(spec)
    if recipe_sha256(wanted) != manifest.recipe_sha256:
        key = next(
            key for key in sorted(wanted.keys() | manifest.recipe.keys()) if _differs(wanted, manifest.recipe, key)
        )
        return f"{key} is {wanted.get(key)!r} here, {manifest.recipe.get(key)!r} in the recipe it was made with"
    corpora, sampled = general_side(spec), sample_tokens(spec)
    if corpora.keys() != manifest.corpora.keys():
        return f"it was made from {sorted(manifest.corpora)}, this spec names {sorted(corpora)}"
    problems = (
        _corpus_mismatch(name, corpus, manifest.corpora[name], sampled[name]) for name, corpus in corpora.items()
    )
    return next((problem for problem in problems if problem is not None), None)


def _differs(ours: dict[str, Any], theirs: dict[str, Any], key: str) -> bool:
    return key not in ours or key not in theirs or ours[key] != theirs[key]


def _corpus_mismatch(name: str, corpus: Corpus, made_from: CorpusFile, sampled: int) -> str | None:
    other = f"data.{name} ({corpus.label}) is not the {made_from.path} it was made from"
    if corpus.prefixes() is not None:
        return other
    shards = corpus.shards()
    # The size first: a corpus of another size is never hashed, however large.
    if len(shards) != 1 or shards[0].stat().st_size != made_from.bytes or file_sha256(shards[0]) != made_from.sha256:
        return other
    if sampled < made_from.tokens:
        return (
            f"data.{name}'s sample holds {sampled:,} tokens, part of the {made_from.tokens:,} of "
            f"{made_from.path} it was made from"
        )
    return None


def check_files(directory: Path, manifest: ShippedManifest) -> None:
    """ShippedBaseError naming the first file that is missing, extra, or not the one the manifest hashes."""
    present = {path.name for path in directory.iterdir()} - {MANIFEST}
    if extra := sorted(present - manifest.files.keys()):
        raise ShippedBaseError(f"{directory / extra[0]} is not in its manifest")
    for name, expected in sorted(manifest.files.items()):
        path = directory / name
        if not path.is_file():
            raise ShippedBaseError(f"{path} is missing")
        actual = file_sha256(path)
        if actual != expected:
            raise ShippedBaseError(
                f"{path} has sha256 {actual[:16]}..., its manifest {expected[:16]}...: the file is corrupt or was "
                f"changed"
            )
