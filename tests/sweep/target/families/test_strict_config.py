"""Every number read from a model's config.json is of its type: an integer key given `true`, "28" or 28.0 is refused
naming the file and the key (issue 52: `"num_hidden_layers": true` was read as one layer, N 2.3e8 instead of 6.5e9,
and planned with --num-layers 1); a float key may be written as an integer, as released configs do."""

from __future__ import annotations

import json
import typing

import pytest

from cli import main
from sweep.spec.shapes import HfModelConfig, hf_shape as proxy_shape
from sweep.target.errors import TargetError
from sweep.target.families.family import DecoderConfig
from sweep.target.families.registry import hf_shape
from tests.hostile import tree
from tests.sweep.promote.promote_runs import write_run
from tests.sweep.target.families.test_families import CONFIGS

LLAMA = CONFIGS["llama3.1-8b"]
INTEGER_KEYS = [
    key
    for key, field in DecoderConfig.model_fields.items()
    if int in (field.annotation, *typing.get_args(field.annotation)) and key in LLAMA
]
NOT_INTEGERS = {"true": True, "'28'": "28", "28.0": 28.0}


def written(tmp_path, config: dict) -> typing.Any:
    directory = tmp_path / "base"
    directory.mkdir(exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory


def test_the_integer_keys_are_the_shape_keys():
    assert {"num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size", "vocab_size"} <= set(
        INTEGER_KEYS
    )


@pytest.mark.parametrize("value", NOT_INTEGERS.values(), ids=list(NOT_INTEGERS))
@pytest.mark.parametrize("key", INTEGER_KEYS)
def test_an_integer_key_of_another_type_is_refused_naming_the_file_and_key(key, value, tmp_path):
    directory = written(tmp_path, {**LLAMA, key: value})
    with pytest.raises(TargetError) as raised:
        hf_shape(directory)
    message = str(raised.value)
    assert message.startswith(f"{directory / 'config.json'}: ") and key in message and repr(value) in message


@pytest.mark.parametrize(("key", "whole"), [("rope_theta", 500000), ("attention_dropout", 0)])
def test_a_float_key_may_be_an_integer_but_not_a_boolean(key, whole, tmp_path):
    assert hf_shape(written(tmp_path, {**LLAMA, key: whole}))[0] is not None
    with pytest.raises(TargetError, match=key):
        hf_shape(written(tmp_path, {**LLAMA, key: True}))


def test_a_llama3_rope_constant_given_as_a_boolean_is_refused(tmp_path):
    scaling = {**LLAMA["rope_scaling"], "low_freq_factor": True}  # True == 1.0 in Python
    with pytest.raises(TargetError, match="rope_scaling"):
        hf_shape(written(tmp_path, {**LLAMA, "rope_scaling": scaling}))


def test_a_boolean_layer_count_is_not_planned_as_one_layer(tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    directory = written(tmp_path, {**LLAMA, "num_hidden_layers": True})
    before = tree(tmp_path)
    assert main(["promote", "plan", str(run_dir), "--target", str(directory), "--max-lr", "3e-4"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line == f"error: {directory / 'config.json'}: num_hidden_layers: Input should be a valid integer, got True"
    assert tree(tmp_path) == before


@pytest.mark.parametrize("value", NOT_INTEGERS.values(), ids=list(NOT_INTEGERS))
def test_a_proxy_base_layer_count_of_another_type_gives_no_shape(value, tmp_path):
    """A spec's Hugging Face base (and a ladder's rung): the same strict reading, so no N is counted from `true`."""
    config = {key: LLAMA[key] for key in HfModelConfig.model_fields if key in LLAMA} | {"vocab_size": 128256}
    assert proxy_shape(written(tmp_path, config), 64) is not None
    assert proxy_shape(written(tmp_path, {**config, "num_hidden_layers": value}), 64) is None
