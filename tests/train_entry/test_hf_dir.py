"""A base runs no code and is read as untrusted input: every Hugging Face load of a model or tokenizer directory."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.hf_dirs import plant_code, save_tiny_llama
from train_entry.data.corpus import CorpusError
from train_entry.data.tokenizer import load_tokenizer, megatron_tokenizer
from train_entry.hf_dir import HfDirError
from train_entry.model import Runtime, load_causal_lm

LOADERS = {
    "model": lambda directory: load_causal_lm(directory, Runtime.detect()),
    "tokenizer": load_tokenizer,
    "megatron tokenizer": megatron_tokenizer,
}


@pytest.fixture
def tiny_base(tmp_path) -> Path:
    return save_tiny_llama(tmp_path / "base")


def _edit_config(directory: Path, **changes) -> None:
    path = directory / "config.json"
    path.write_text(json.dumps({**json.loads(path.read_text()), **changes}))


@pytest.mark.parametrize("file", ["config.json", "tokenizer_config.json"])
@pytest.mark.parametrize("loader", LOADERS)
def test_a_directory_naming_code_is_refused_naming_the_file_and_the_key_and_nothing_runs(
    tiny_base, tmp_path, loader, file
):
    marker = tmp_path / "marker"
    plant_code(tiny_base, marker, file=file)
    with pytest.raises(HfDirError, match=rf"{tiny_base / file}: auto_map names Python code"):
        LOADERS[loader](tiny_base)
    assert not marker.exists()


def test_sweep_base_refuses_a_base_naming_code_with_exit_2_though_stdin_answers_yes(
    tiny_base, tmp_path, write_tiny_spec
):
    """transformers asks "Do you wish to run the custom code? [y/N]" for such a directory unless told not to."""
    marker = tmp_path / "marker"
    plant_code(tiny_base, marker)
    spec = write_tiny_spec(f"planted-{tmp_path.name}.yaml")
    raw = yaml.safe_load(spec.read_text())
    spec.write_text(yaml.safe_dump({**raw, "base": {"model": str(tiny_base), "max_lr": 3e-4}}))
    command = [sys.executable, "-m", "cli", "base", str(spec)]
    done = subprocess.run(command, input="y\ny\n", check=False, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"{tiny_base / 'config.json'}: auto_map names Python code" in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and not marker.exists(), done.stderr


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ("[]", "config.json: a JSON object is expected, got list []"),
        ("{not json", "config.json: not JSON (JSONDecodeError"),
        ('{"vocab_size": "4096"}', "config.json: vocab_size must be a positive integer, got '4096'"),
    ],
)
@pytest.mark.parametrize("loader", LOADERS)
def test_a_config_json_that_is_not_one_is_refused_by_every_loader_naming_it(tiny_base, loader, change, message):
    """AutoTokenizer reads config.json too: its faults were reported as "not a loadable tokenizer directory"."""
    (tiny_base / "config.json").write_text(change)
    with pytest.raises(HfDirError, match=rf"{tiny_base / 'config.json'}"):
        LOADERS[loader](tiny_base)
    with pytest.raises(HfDirError) as refused:
        LOADERS[loader](tiny_base)
    assert message in str(refused.value)


def test_weights_that_do_not_fit_the_config_are_refused_in_one_line(tiny_base):
    _edit_config(tiny_base, hidden_size=32, head_dim=16)
    with pytest.raises(HfDirError) as refused:
        load_causal_lm(tiny_base, Runtime.detect())
    message = str(refused.value)
    said = "its weights do not fit its config.json: lm_head.weight has shape (64, 16) where it asks for (64, 32)"
    assert said in message
    assert "\n" not in message


def test_a_base_with_a_weight_missing_or_none_at_all_is_refused(tiny_base):
    from safetensors.torch import load_file, save_file

    weights = load_file(tiny_base / "model.safetensors")
    del weights["model.norm.weight"]
    save_file(weights, tiny_base / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(HfDirError, match="model.norm.weight is missing"):
        load_causal_lm(tiny_base, Runtime.detect())
    (tiny_base / "model.safetensors").unlink()
    with pytest.raises(HfDirError, match="not a loadable Hugging Face causal LM \\(OSError: "):
        load_causal_lm(tiny_base, Runtime.detect())


def test_a_tokenizer_directory_without_one_stays_a_corpus_input_error(tiny_base):
    with pytest.raises(CorpusError, match="not a loadable Hugging Face tokenizer directory"):
        load_tokenizer(tiny_base)
