"""Targets from a base's own config.json: each family reads its published config into the preset's shape and the
published parameter count; a config the planner cannot represent is refused naming the key; a further family is
one Family, planned by the estimators unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from cli import main
from sweep.promote.errors import PromotionError
from sweep.promote.estimate.assumptions import Assumptions
from sweep.promote.estimate.clusters import PRESETS as CLUSTERS
from sweep.promote.estimate.counts import model_flops_per_token
from sweep.promote.estimate.layout import LayoutRequest, search_layouts
from sweep.promote.estimate.targets import PRESETS, load_target
from sweep.promote.families.family import DecoderConfig, Family, decoder_shape
from sweep.promote.families.registry import FAMILIES, hf_shape
from sweep.promote.plan.megatron_args import args_text
from sweep.promote.plan.plan import make_plan
from sweep.promote.plan.summary import summary_markdown
from sweep.promote.request.config import PromotionConfig
from sweep.scale import active_params, total_params
from tests.sweep.promote.released_configs import CONFIGS


PUBLISHED = {
    # Total parameters in billions as their makers (or the Hub, from the weights) state them, to their digits.
    "qwen2.5-0.5b": "0.49",  # Qwen/Qwen2.5-0.5B model card
    "qwen2.5-3b": "3.09",  # Qwen/Qwen2.5-3B model card
    "qwen2.5-7b": "7.61",  # Qwen/Qwen2.5-7B model card
    "qwen2.5-72b": "72.7",  # Qwen/Qwen2.5-72B model card
    "qwen3-4b": "4.0",  # Qwen/Qwen3-4B model card
    "qwen3-8b": "8.2",  # Qwen/Qwen3-8B model card
    "qwen3-32b": "32.8",  # Qwen/Qwen3-32B model card
    "mistral-7b": "7.24",  # mistralai/Mistral-7B-v0.1's safetensors as the Hugging Face Hub counts them
    "mixtral-8x7b": "46.7",  # Mistral AI, "Mixtral of experts" announcement (2023-12-11)
    "qwen3-30b-a3b": "30.5",  # Qwen/Qwen3-30B-A3B model card
}


def model_dir(tmp_path: Path, name: str, **changes) -> Path:
    directory = tmp_path / name
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({**CONFIGS[name], **changes}))
    return directory


@pytest.mark.parametrize("name", [name for name in CONFIGS if name in PRESETS])
def test_a_released_config_reads_into_its_presets_shape(tmp_path, name):
    target = load_target(str(model_dir(tmp_path, name)), max_lr=3e-4)
    assert target.model == PRESETS[name].model
    assert (target.name, target.max_lr) == (name, 3e-4)
    assert "config.json read as" in target.source


@pytest.mark.parametrize("name", sorted(PUBLISHED))
def test_each_familys_parameter_count_is_the_published_total_to_its_digits(tmp_path, name):
    """Within the published figure's rounding (half its last digit), or half a percent where that is wider."""
    model, _ = hf_shape(model_dir(tmp_path, name))
    published = float(PUBLISHED[name])
    rounding = 0.5 * 10 ** -len(PUBLISHED[name].partition(".")[2])
    assert abs(total_params(model) / 1e9 - published) <= max(rounding, 0.005 * published)
    if name in PRESETS:
        assert total_params(PRESETS[name].model) == total_params(model)


def test_an_moe_model_costs_its_active_parameters_and_holds_all_of_them():
    """Mixtral 8x7B: 12.9 B of 46.7 B parameters per token (Mistral AI's announcement): FLOPs follow the active."""
    model = PRESETS["mixtral-8x7b"].model
    assert active_params(model) / 1e9 == pytest.approx(12.9, rel=0.005)
    dense_twin = model.model_copy(update={"moe": None})  # the same model with one expert, always chosen
    expert_flops = 6 * model.num_layers * (2 - 1) * 3 * model.hidden_size * model.moe.expert_ffn_hidden_size
    router_flops = 6 * model.num_layers * model.hidden_size * model.moe.num_experts
    assert model_flops_per_token(model) == pytest.approx(
        model_flops_per_token(dense_twin) + expert_flops + router_flops
    )


def test_a_directory_without_a_config_is_no_target(tmp_path):
    with pytest.raises(PromotionError, match="is a directory without a config.json"):
        load_target(str(tmp_path))


@pytest.mark.parametrize(
    ("name", "changes", "message"),
    [
        ("llama3.1-8b", {"model_type": "gemma2"}, "model_type = 'gemma2' cannot be planned: no family"),
        ("llama3.1-8b", {"hidden_act": "gelu"}, "hidden_act = 'gelu' cannot be planned"),
        ("llama3.1-8b", {"attention_bias": True}, "attention_bias = True cannot be planned"),
        ("llama3.1-8b", {"rope_scaling": {"rope_type": "yarn", "factor": 4.0}}, "rope_scaling = "),
        ("llama3.1-8b", {"partial_rotary_factor": 0.5}, "partial_rotary_factor = 0.5 cannot be planned"),
        ("qwen2.5-3b", {"use_sliding_window": True}, "use_sliding_window = True cannot be planned"),
        ("qwen3-30b-a3b", {"mlp_only_layers": [0, 47]}, "mlp_only_layers = [0, 47] cannot be planned"),
        ("qwen3-30b-a3b", {"norm_topk_prob": False}, "norm_topk_prob = False cannot be planned"),
        ("mixtral-8x7b", {"num_local_experts": "eight"}, "num_local_experts: Input should be a valid integer"),
        ("mistral-7b", {"auto_map": {"AutoModel": "modeling.Model"}}, "auto_map names Python code"),
    ],
)
def test_a_config_the_planner_cannot_represent_is_refused_naming_the_file_and_key(tmp_path, name, changes, message):
    directory = model_dir(tmp_path, name, **changes)
    with pytest.raises(PromotionError, match="config.json") as refused:
        load_target(str(directory), max_lr=3e-4)
    assert message in str(refused.value)


def test_promote_plans_a_model_directory_and_asks_for_its_max_lr(finished_run, tmp_path, capsys):
    run_dir, directory = finished_run(), model_dir(tmp_path, "qwen3-30b-a3b")
    assert main(["promote", "plan", str(run_dir), "--target", str(directory)]) == 2
    assert "target qwen3-30b-a3b has no max_lr" in capsys.readouterr().err
    assert main(["promote", "plan", str(run_dir), "--target", str(directory), "--max-lr", "3e-4"]) == 0
    out = " ".join(capsys.readouterr().out.replace("│", " ").split())
    assert "128 experts of FFN 768, top 8" in out and "QK-norm" in out and "B active per token" in out
    bad = model_dir(tmp_path, "mistral-7b", hidden_act="relu")
    assert main(["promote", "plan", str(run_dir), "--target", str(bad), "--max-lr", "3e-4"]) == 2
    assert "hidden_act = 'relu' cannot be planned" in capsys.readouterr().err
    assert not (run_dir / "promotion" / "mistral-7b").exists()


def _phi3_shape(config: DecoderConfig, seq_length: int):
    """Phi-3 mini: Llama's layers under another model_type (its fused QKV and gate/up weights are a checkpoint
    layout, not another shape)."""
    return decoder_shape(config, seq_length)


PHI3 = Family(name="Phi-3", model_types=("phi3",), config=DecoderConfig, shape=_phi3_shape)
"""A further family: this module's few lines are all it takes (docs/full-run.md, "Another family")."""


def test_a_further_family_is_one_module_and_the_estimators_plan_it_unchanged(tmp_path):
    directory = tmp_path / "phi3-mini"
    directory.mkdir()
    # microsoft/Phi-3-mini-4k-instruct's config.json shape keys.
    (directory / "config.json").write_text(json.dumps({
        "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
        "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064, "rope_theta": 10000.0,
        "rms_norm_eps": 1e-05, "max_position_embeddings": 4096, "hidden_act": "silu", "tie_word_embeddings": False,
    }))  # fmt: skip
    with pytest.raises(PromotionError, match="model_type = 'phi3' cannot be planned"):
        hf_shape(directory)
    model, family = hf_shape(directory, families=(*FAMILIES, PHI3))
    assert family is PHI3 and model.seq_length == 4096
    assert total_params(model) / 1e9 == pytest.approx(3.8, rel=0.01)  # the Phi-3 technical report's "3.8B"
    search = search_layouts(
        model, CLUSTERS["h100-480"], global_batch_size=1440, request=LayoutRequest(), assumptions=Assumptions()
    )
    chosen = search.ranked[0]
    assert chosen.memory.total_gb < 80 and chosen.step.total_s > 0


def _toyformer_shape(config: DecoderConfig, seq_length: int):
    """A made-up family: Llama's layers with Qwen 2.5's QKV bias and Qwen 3's QK-norm."""
    return decoder_shape(config, seq_length, add_qkv_bias=True, qk_layernorm=True)


TOYFORMER = Family(name="Toyformer", model_types=("toyformer",), config=DecoderConfig, shape=_toyformer_shape)


def test_a_made_up_familys_target_is_planned_whole_by_the_unchanged_planner(finished_run, tmp_path):
    """Through the family interface alone: its shape, saved as a target file, gets a whole plan (layout, memory, step
    time, megatron-core's configs, Megatron-LM's flags, the summary) from estimators that know no family."""
    directory = tmp_path / "toyformer-1b"
    directory.mkdir()
    (directory / "config.json").write_text(json.dumps({
        "model_type": "toyformer", "hidden_size": 2048, "intermediate_size": 5632, "num_hidden_layers": 24,
        "num_attention_heads": 16, "num_key_value_heads": 4, "vocab_size": 32000, "max_position_embeddings": 4096,
    }))  # fmt: skip
    model, family = hf_shape(directory, families=(*FAMILIES, TOYFORMER))
    assert family is TOYFORMER and model.add_qkv_bias and model.qk_layernorm
    target = tmp_path / "toyformer-1b.yaml"
    target.write_text(yaml.safe_dump({"name": "toyformer-1b", "max_lr": 3e-4, "model": model.model_dump(mode="json")}))
    plan = make_plan(finished_run(), PromotionConfig(target=str(target)))
    assert plan.run.model == model and plan.layouts and plan.estimate.gpu_hours > 0
    assert "--add-qkv-bias" in args_text(plan) and "--qk-layernorm" in args_text(plan)
    summary = " ".join(summary_markdown(plan).replace("│", " ").split())  # the table's cells wrap over lines
    shape = "24 layers, hidden 2048, FFN 5632, 16 heads / 4 KV, vocab 32000, seq 4096, QKV bias, QK-norm"
    assert f"toyformer-1b: {shape}; {total_params(model) / 1e9:.2f} B parameters" in summary


def test_a_windowed_target_on_an_image_without_transformer_engine_is_refused_naming_the_window(finished_run, capsys):
    """Only Transformer Engine's attention takes a sliding window in the entry: the plan says so before any job."""
    flags = ["--target", "mistral-7b", "--max-lr", "3e-4", "--no-transformer-engine"]
    assert main(["promote", "plan", str(finished_run()), *flags]) == 2
    assert "Transformer Engine's layers are needed for model.window_size=4096" in capsys.readouterr().err
