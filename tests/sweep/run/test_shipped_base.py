"""The shipped built-in base: used when its manifest is the spec's recipe and corpora and every file hashes as the
manifest says; otherwise the base is built into the cache, with one line saying why, and a damaged directory is
never read."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch
import yaml

from cli import main
from sweep.run.prepare import prepare
from sweep.run.ship import ship_base, write_shipped
from sweep.run.shipped_base import read_manifest, shipped_base
from sweep.spec.spec import SweepSpec, load_spec
from tests.conftest import REPO
from train_entry.builtin_base import MANIFEST, SHIPPED_DIR
from train_entry.file_format import WRITTEN_BY
from train_entry.model import Runtime, load_causal_lm

DEFAULT_SPEC = REPO / "search_spaces" / "lr_mix.yaml"
SHIPPED_SPECS = [DEFAULT_SPEC, REPO / "search_spaces" / "lr_mix_python.yaml"]
REBUILD = "sweep base search_spaces/lr_mix.yaml --ship data/tiny-llama"


@pytest.mark.parametrize("spec_path", SHIPPED_SPECS, ids=[path.name for path in SHIPPED_SPECS])
def test_the_shipped_base_is_the_one_the_default_recipe_and_corpora_make(spec_path, capsys):
    """Fails when the default spec's base recipe, the tool's recipe versions or the bundled general corpora change
    without the shipped base being rebuilt (the first default sweep would pretrain for minutes again)."""
    assert shipped_base(load_spec(spec_path), SHIPPED_DIR) == (SHIPPED_DIR, ""), f"rebuild it: {REBUILD}"
    assert capsys.readouterr().err == ""
    manifest = read_manifest(SHIPPED_DIR)
    assert {name: entry.path for name, entry in manifest.corpora.items()} == {
        "general.train": "data/general_en/train.jsonl",
        "non_english.train": "data/general_multi/train.jsonl",
    }
    assert manifest.command == REBUILD


def _default_spec(tmp_path: Path, change: Callable[[dict], Any]) -> SweepSpec:
    """The default spec, its corpora where they are, changed in place by `change(raw)`."""
    raw = yaml.safe_load(DEFAULT_SPEC.read_text())
    for side in ("domain", "general", "non_english"):
        for split in ("train", "valid"):
            raw["data"][side][split] = str((DEFAULT_SPEC.parent / raw["data"][side][split]).resolve())
    change(raw)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw))
    return load_spec(path)


def _changed_copy(path: str, tmp_path: Path) -> str:
    """The corpus file with one character changed, its size kept: only its hash tells it apart."""
    copy = tmp_path / Path(path).name
    text = Path(path).read_text()
    copy.write_text(text[:100] + ("a" if text[100] != "a" else "b") + text[101:])
    assert copy.stat().st_size == Path(path).stat().st_size
    return str(copy)


SPEC_CHANGES = {
    "base.builtin.pretrain_steps is 1199 here, 1200 in the recipe it was made with": lambda raw, _: raw["base"].update(
        builtin={"pretrain_steps": 1199}
    ),
    "data.non_english.share is 0.2 here, 0.1 in the recipe it was made with": lambda raw, _: raw["data"][
        "non_english"
    ].update(share=0.2),
    "data.general.train (": lambda raw, tmp_path: raw["data"]["general"].update(
        train=_changed_copy(raw["data"]["general"]["train"], tmp_path)
    ),
    "data.general.train's sample holds": lambda raw, _: raw["data"].update(sample={"margin": 1.0, "min_tokens": 1}),
    "data.non_english.share is 0.0 here, 0.1 in the recipe it was made with": lambda raw, _: raw["data"].pop(
        "non_english"
    ),
}


@pytest.mark.parametrize("said", SPEC_CHANGES, ids=range(len(SPEC_CHANGES)))
def test_another_recipe_or_other_corpora_build_the_base_into_the_cache_saying_why(said, tmp_path, capsys):
    spec = _default_spec(tmp_path, lambda raw: SPEC_CHANGES[said](raw, tmp_path))
    ready, why_not = shipped_base(spec, SHIPPED_DIR)
    assert ready is None and why_not.startswith(f"builtin:tiny-llama: not the shipped one ({SHIPPED_DIR}): {said}")
    assert why_not.endswith("; pretraining the cache's (once)")
    assert capsys.readouterr().err == ""  # said only if the base is pretrained: a bad corpus stays a one-line error


def _flip_a_byte(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 1
    path.write_bytes(bytes(data))


def _rewrite_manifest(directory: Path, **changes) -> None:
    manifest = json.loads((directory / MANIFEST).read_text())
    (directory / MANIFEST).write_text(json.dumps({**manifest, **changes}))


DAMAGE = {
    "changed weights": (lambda d: _flip_a_byte(d / "model.safetensors"), "{d}/model.safetensors has sha256 "),
    "a pickle added": (lambda d: (d / "pytorch_model.bin").touch(), "{d}/pytorch_model.bin is not in its manifest"),
    "a file missing": (lambda d: (d / "tokenizer.json").unlink(), "{d}/tokenizer.json is missing"),
    "a pickle listed": (
        lambda d: _rewrite_manifest(d, files={**read_manifest(d).files, "pytorch_model.bin": "0" * 64}),
        "{d}/cpt_sweep_base.json is not a shipped-base manifest cpt-sweep wrote: files: Value error, lists ['pytorch_model.bin']",
    ),
    "the recipe edited": (
        lambda d: _rewrite_manifest(d, recipe={**read_manifest(d).recipe, "base.max_lr": 0.001}),
        "{d}/cpt_sweep_base.json: its recipe does not hash to its recipe_sha256",
    ),
    "a later format": (
        lambda d: _rewrite_manifest(d, format_version=2),
        f"{{d}}/cpt_sweep_base.json: shipped-base manifest format 2 (written by {WRITTEN_BY}); this {WRITTEN_BY} "
        + "reads shipped-base manifest format 1 only",
    ),
    "no JSON": (
        lambda d: (d / MANIFEST).write_text("{not json"),
        "{d}/cpt_sweep_base.json is not a shipped-base manifest cpt-sweep wrote: (top level): Invalid JSON",
    ),
    "no manifest": (lambda d: (d / MANIFEST).unlink(), "{d}/cpt_sweep_base.json: not a regular file"),
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_shipped_base_is_refused_naming_the_file(damage, tmp_path, capsys):
    directory = tmp_path / "tiny-llama"
    shutil.copytree(SHIPPED_DIR, directory)
    harm, said = DAMAGE[damage]
    harm(directory)
    assert shipped_base(load_spec(DEFAULT_SPEC), directory)[0] is None
    err = capsys.readouterr().err
    assert err.startswith(f"warning: the shipped builtin:tiny-llama is refused: {said.format(d=directory)}"), err
    assert err.endswith("; pretraining it into the cache instead\n") and err.count("\n") == 1


def test_a_sweep_reads_a_shipped_base_and_builds_its_own_once_the_shipped_one_is_damaged(tiny_spec, tmp_path, capsys):
    """The tiny spec's base (pretrained once per test run, in the session cache) shipped to a folder: prepare
    takes its weights and tokenizer from there, and after a byte of them changes, from the cache again."""
    spec = load_spec(tiny_spec)
    cached = prepare(spec, shipped=None)
    shipped = tmp_path / "tiny-llama"
    write_shipped(spec, tiny_spec, cached, shipped)
    capsys.readouterr()

    prepared = prepare(spec, shipped=shipped)
    assert (prepared.base_dir, prepared.tokenizer_dir) == (shipped, shipped)
    assert prepared.base_losses == cached.base_losses
    assert "shipped" not in capsys.readouterr().err
    runtime = Runtime.detect()
    ours, theirs = load_causal_lm(shipped, runtime).state_dict(), load_causal_lm(cached.base_dir, runtime).state_dict()
    assert ours.keys() == theirs.keys() and all(torch.equal(ours[key], theirs[key]) for key in ours)

    tokenizer = shipped / "tokenizer.json"
    tokenizer.write_text(tokenizer.read_text().replace('"<|pad|>"', '"<|pad2|>"', 1))
    again = prepare(spec, shipped=shipped)
    assert again.base_dir == cached.base_dir and again.tokenizer_dir == cached.tokenizer_dir
    assert f"refused: {tokenizer} has sha256" in capsys.readouterr().err


def test_shipping_into_a_folder_of_other_files_is_refused_before_any_pretraining(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")  # the command sets it for the pretraining; restored after
    folder = tmp_path / "mine"
    folder.mkdir()
    (folder / "notes.txt").write_text("keep me")
    assert main(["base", str(DEFAULT_SPEC), "--ship", str(folder)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {folder} holds notes.txt, which is no shipped base's file: name a new or empty folder"
    )
    assert (folder / "notes.txt").read_text() == "keep me"


@pytest.mark.slow
@pytest.mark.reproduce
@pytest.mark.timeout(3600)  # one thread: 8 min on a quiet 2-core machine, 23 on a busy one
def test_the_ship_command_reproduces_the_shipped_files_bit_for_bit(tmp_path):
    """Pretrains the default base from the bundled corpora (~8 min on 2 cores): run with --reproduce. Bit for bit
    where torch, its CPU kernels and the threads are the manifest's built_with."""
    shipped = read_manifest(SHIPPED_DIR)
    rebuilt = ship_base(load_spec(DEFAULT_SPEC), DEFAULT_SPEC, tmp_path / "tiny-llama")
    assert rebuilt.built_with == shipped.built_with, "another machine kind: the files may differ in the last bits"
    assert rebuilt.files == shipped.files
    assert rebuilt.model_dump(exclude={"command"}) == shipped.model_dump(exclude={"command"})
