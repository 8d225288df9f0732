"""`python -m train_entry.megatron --config full_run.json`: a config that cannot run exits 2 with one message."""

from __future__ import annotations

import json

import pytest
import torch

from tests.hf_dirs import plant_code
from train_entry.file_format import FORMAT_KEY, FULL_RUN
from train_entry.megatron.__main__ import main
from train_entry.megatron.core_configs import has_transformer_engine


def _write(tmp_path, data) -> str:
    path = tmp_path / "full_run.json"
    path.write_text(FULL_RUN.dumps_data(data))
    return str(path)


def _runnable(full_run_data, tmp_path, **parallelism):
    data = full_run_data(**parallelism)
    data["checkpoint"] = {"save_dir": str(tmp_path / "run"), "save_interval": 10}
    return data


def test_an_unreadable_config_exits_2(tmp_path, capsys):
    assert main(["--config", str(tmp_path / "missing.json")]) == 2
    assert "missing.json': cannot read it (No such file or directory)" in capsys.readouterr().err


def test_a_config_of_another_format_version_exits_2_naming_the_file_and_left_as_it_was(full_run_data, tmp_path, capsys):
    path = tmp_path / "full_run.json"
    # Format 1 evaluated one blended validation loss; format 2 lists the validation sets it evaluates apart.
    path.write_text(json.dumps({FORMAT_KEY: 1, **_runnable(full_run_data, tmp_path)}))
    content = path.read_bytes()
    assert main(["--config", str(path)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert (
        line.startswith(f"error: {path}: full run config format 1 ") and "reads full run config format 2 only" in line
    )
    assert path.read_bytes() == content and not (tmp_path / "run").exists()


def test_a_bad_value_exits_2_naming_the_file_and_the_key(full_run_data, tmp_path, capsys):
    data = _runnable(full_run_data, tmp_path)
    data["optimization"]["lr"] = -1
    path = _write(tmp_path, data)
    assert main(["--config", path]) == 2
    err = capsys.readouterr().err
    assert path in err and "optimization.lr" in err


def test_a_layout_megatron_core_rejects_exits_2_with_its_reason(full_run_data, tmp_path, capsys):
    assert main(["--config", _write(tmp_path, _runnable(full_run_data, tmp_path, tensor=3))]) == 2
    assert "num_attention_heads (64) must be a multiple of tensor_model_parallel_size (3)" in capsys.readouterr().err


def test_a_base_that_is_no_megatron_checkpoint_exits_2(full_run_data, tmp_path, capsys):
    data = _runnable(full_run_data, tmp_path, tensor=8)
    data["checkpoint"]["base_dir"] = str(tmp_path)
    assert main(["--config", _write(tmp_path, data)]) == 2
    assert "is not a Megatron distributed checkpoint" in capsys.readouterr().err


def test_a_tokenizer_directory_naming_code_exits_2_before_anything_runs(full_run_data, tmp_path, capsys):
    marker = tmp_path / "marker"
    data = _runnable(full_run_data, tmp_path, tensor=8)
    data["data"]["tokenizer"] = str(plant_code(tmp_path / "tokenizer", marker, file="tokenizer_config.json"))
    assert main(["--config", _write(tmp_path, data)]) == 2
    assert "tokenizer_config.json: auto_map names Python code" in capsys.readouterr().err
    assert not marker.exists()


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message a CPU-only machine gets")
def test_a_valid_config_needs_a_gpu(full_run_data, tmp_path):
    with pytest.raises(RuntimeError, match="trains on CUDA GPUs; this process sees none"):
        main(["--config", _write(tmp_path, _runnable(full_run_data, tmp_path, tensor=8))])


@pytest.mark.skipif(has_transformer_engine(), reason="checks what a node without Transformer Engine refuses")
def test_a_layout_that_needs_transformer_engine_exits_2_on_a_node_without_it(full_run_data, tmp_path, capsys):
    assert main(["--config", _write(tmp_path, _runnable(full_run_data, tmp_path, tensor=8, context=2))]) == 2
    assert "Transformer Engine's layers are needed for parallelism.context=2" in capsys.readouterr().err
