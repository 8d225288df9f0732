"""prepare: a base whose config, tokenizer and embeddings do not fit together is refused before any corpus is read;
extra validation draws follow the sweep's own and leave them as they were."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from sweep.files.records import CorruptFile
from sweep.run.prepare import Prepared, prepare
from sweep.run.sample_size import confirmation_draws
from sweep.spec.spec import load_spec
from tests.hf_dirs import save_tiny_llama
from train_entry.data.corpus import Corpus, CorpusError
from train_entry.data.tokenizer import train_bpe
from train_entry.hf_dir import HfDirError
from train_entry.trial_config import BaseLosses, CorpusPrefixes

VOCAB = 300
"""The tokenizer's tokens; the base embeds fewer."""


@pytest.fixture
def small_embedding_base(tiny_corpora, tmp_path) -> Path:
    """A Hugging Face Llama embedding 64 tokens, holding its own tokenizer of 300."""
    tokenizer = train_bpe([Corpus.of(tiny_corpora / "corpora" / "general_en" / "valid.jsonl")], VOCAB, tmp_path)
    base = save_tiny_llama(tmp_path / "base", vocab_size=64)
    for path in tokenizer.iterdir():
        shutil.copy(path, base / path.name)
    return base


def _spec(write_tiny_spec, base: Path, **extra) -> Path:
    path = write_tiny_spec(f"{base.parent.name}.yaml")
    raw = yaml.safe_load(path.read_text())
    path.write_text(yaml.safe_dump({**raw, "base": {"model": str(base), "max_lr": 3e-4, **extra}}))
    return path


def test_a_base_whose_own_tokenizer_outgrows_its_embeddings_is_said_to_be_inconsistent(
    small_embedding_base, write_tiny_spec
):
    """It said "use the base's own tokenizer (leave base.tokenizer unset)", which it already was."""
    with pytest.raises(CorpusError) as refused:
        prepare(load_spec(_spec(write_tiny_spec, small_embedding_base)))
    message = str(refused.value)
    said = f"{small_embedding_base}: its own tokenizer has {VOCAB} tokens but its config.json's vocab_size is 64"
    assert said in message
    assert "leave base.tokenizer unset" not in message


def test_a_named_tokenizer_larger_than_the_embeddings_is_told_to_be_left_out(small_embedding_base, write_tiny_spec):
    tokenizer = small_embedding_base.parent / "tokenizer"
    tokenizer.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        shutil.copy(small_embedding_base / name, tokenizer / name)
    spec = _spec(write_tiny_spec, small_embedding_base, tokenizer=str(tokenizer))
    said = rf"base.tokenizer {tokenizer} has {VOCAB} tokens but the base .* embeds only 64"
    with pytest.raises(CorpusError, match=said):
        prepare(load_spec(spec))


def test_a_config_field_transformers_refuses_is_named_as_the_configs_fault_not_the_tokenizers(
    small_embedding_base, write_tiny_spec
):
    config = small_embedding_base / "config.json"
    config.write_text(json.dumps({**json.loads(config.read_text()), "hidden_size": "16"}))
    with pytest.raises(HfDirError, match=rf"{config}: transformers cannot read it \(.*hidden_size"):
        prepare(load_spec(_spec(write_tiny_spec, small_embedding_base)))


def test_a_base_whose_weights_give_nan_losses_is_exit_2_at_sweep_base_naming_it(
    tiny_corpora, write_tiny_spec, tmp_path, capsys
):
    """It was a pydantic stack from BaseLosses, after every corpus was sampled."""
    import torch
    from transformers import AutoModelForCausalLM

    from cli import main

    tokenizer = train_bpe([Corpus.of(tiny_corpora / "corpora" / "general_en" / "valid.jsonl")], VOCAB, tmp_path)
    base = save_tiny_llama(tmp_path / "nan-base", vocab_size=VOCAB)
    model = AutoModelForCausalLM.from_pretrained(base)
    with torch.no_grad():
        model.lm_head.weight.fill_(float("nan"))
    model.save_pretrained(base)
    for path in tokenizer.iterdir():
        shutil.copy(path, base / path.name)
    spec = _spec(write_tiny_spec, base)

    assert main(["base", str(spec)]) == 2

    error = capsys.readouterr().err  # the samples' progress lines, then one line of error
    line = error.strip().splitlines()[-1]
    assert "Traceback" not in error and line.startswith("error: ")
    assert f"{base}: its weights give a validation loss of nan (domain) and nan (general)" in line


def test_a_damaged_base_loss_cache_entry_is_measured_again(tiny_corpora, write_tiny_spec, tmp_path, capsys):
    """It was BaseLosses.model_validate_json's traceback on every later sweep of the same base and data."""
    tokenizer = train_bpe([Corpus.of(tiny_corpora / "corpora" / "general_en" / "valid.jsonl")], VOCAB, tmp_path)
    base = save_tiny_llama(tmp_path / "base-losses", vocab_size=VOCAB)
    for path in tokenizer.iterdir():
        shutil.copy(path, base / path.name)
    spec = load_spec(_spec(write_tiny_spec, base))
    measured = prepare(spec, root=tmp_path / "cache")
    entries = sorted((tmp_path / "cache" / "base_losses").glob("*.json"))
    assert len(entries) == 2  # the pool (no confirmation, no draws), and its interim windows
    kept = {entry: entry.read_text() for entry in entries}
    entry = entries[0]
    entry.write_text('{"domain_loss": "high", "general_loss": 1.0}')
    capsys.readouterr()

    again = prepare(spec, root=tmp_path / "cache")
    assert (again.base_losses, again.interim_base) == (measured.base_losses, measured.interim_base)

    assert f"warning: {entry} is not a base-loss cache entry" in capsys.readouterr().err
    assert json.loads(entry.read_text()) == json.loads(kept[entry])


@pytest.mark.parametrize("content", ["{not json", "[1, 2]"], ids=["not JSON", "a list"])
def test_a_damaged_base_manifest_is_a_corrupt_file_naming_it(content, write_tiny_spec, tmp_path):
    """`sweep base` printed it with json.loads: a traceback for a manifest damaged in the cache."""
    base = tmp_path / "base"
    base.mkdir()
    (base / "cpt_sweep_base.json").write_text(content)
    prefixes = CorpusPrefixes(general="g", domain="d")
    prepared = Prepared(
        spec=load_spec(write_tiny_spec()), tokenizer_dir=tmp_path, base_dir=base, train=prefixes, valid=prefixes,
        texts=[prefixes], base_losses=[BaseLosses(domain_loss=4.0, general_loss=4.0)],
        interim_base=BaseLosses(domain_loss=4.0, general_loss=4.0), corpus_stats={},
    )  # fmt: skip
    with pytest.raises(CorruptFile, match=rf"{base / 'cpt_sweep_base.json'}: not the manifest cpt-sweep wrote"):
        prepared.base_manifest()


def test_validation_text_too_short_for_its_texts_is_refused_before_the_base_is_built(write_tiny_spec, tmp_path):
    """The tiny corpora's general side holds 25 documents: enough for the pool and one confirmation draw of at least
    10 each, not for two draws besides the pool."""
    one = load_spec(write_tiny_spec("one-draw.yaml", search={"confirmation": {"seeds": 1, "candidates": 1}}))
    two = load_spec(write_tiny_spec("two-draws.yaml", search={"confirmation": {"seeds": 1, "candidates": 2}}))
    root = tmp_path / "cache"

    with pytest.raises(CorpusError, match=r"draw 1's general side holds \d \(data\.general\.valid \+ "):
        prepare(two, root=root)
    assert not (root / "bases").exists() and not (root / "base_losses").exists()  # nothing measured, nothing trained

    assert confirmation_draws(one) == 1 and len(prepare(one, root=root).texts) == 2
