"""Targets from a base's own config.json: each family reads its published config into the preset's shape and the
published parameter count; a config the planner cannot represent is refused naming the key; a further family is
its module and a registry entry, planned by the estimators unchanged."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from cli import main
from sweep.files.rundir import RunDir
from sweep.promote.estimate.counts import model_flops_per_token
from sweep.scale import active_params, total_params
from sweep.target.errors import TargetError
from sweep.target.families.family import DecoderConfig
from sweep.target.families.registry import FAMILIES, PRESETS, hf_shape
from sweep.target.load import load_target
from tests.sweep.target.families.made_up import phi3
from tests.sweep.target.families.made_up.toyformer import TOYFORMER_1B
from tests.sweep.target.families.released_configs import CONFIGS


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


def test_every_preset_is_named_once_and_sits_in_the_family_that_reads_its_released_config():
    """No two presets share a name (the registry would keep only the last), each cites its sources, and a preset
    whose base's config.json is among the released ones is in the family that reads that config's model_type."""
    named = [target.name for family in FAMILIES for target in family.presets]
    assert len(named) == len(set(named)) == len(PRESETS)
    for family in FAMILIES:
        for target in family.presets:
            assert target.source
            if target.name in CONFIGS:
                assert CONFIGS[target.name]["model_type"] in family.model_types, target.name


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
    with pytest.raises(TargetError, match="is a directory without a config.json"):
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
    with pytest.raises(TargetError, match="config.json") as refused:
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


PACKAGES = ("cli", "reports", "sweep", "train_entry")
MADE_UP = Path(__file__).parent / "made_up"
REGISTRY = Path("sweep/target/families/registry.py")
PLAN_BOTH = """
import sys
from pathlib import Path
import sweep
from cli import main
assert Path(sweep.__file__).is_relative_to(Path.cwd()), sweep.__file__  # the copy, not the checkout
run, phi3 = sys.argv[1:]
toyformer = main(["promote", "plan", run, "--target", "toyformer-1b"])
sys.exit(toyformer or main(["promote", "plan", run, "--target", phi3, "--max-lr", "3e-4"]))
"""
PHI3_MINI = {
    # microsoft/Phi-3-mini-4k-instruct's config.json shape keys.
    "model_type": "phi3", "hidden_size": 3072, "intermediate_size": 8192, "num_hidden_layers": 32,
    "num_attention_heads": 32, "num_key_value_heads": 32, "vocab_size": 32064, "rope_theta": 10000.0,
    "rms_norm_eps": 1e-05, "max_position_embeddings": 4096, "hidden_act": "silu", "tie_word_embeddings": False,
}  # fmt: skip


def with_families(tree: Path, *names: str) -> None:
    """A copy of the project with the made-up family modules `names` added the way a contributor adds one: the
    module under sweep/target/families/ and its entry in the registry, nothing else."""
    repo = Path(__file__).resolve().parents[4]
    for package in PACKAGES:  # bytecode too: unchanged modules are not compiled again
        shutil.copytree(repo / package, tree / package)
    for name in names:
        shutil.copy(MADE_UP / f"{name}.py", tree / "sweep/target/families" / f"{name}.py")
    registry = (tree / REGISTRY).read_text()
    edits = {
        "from sweep.target.families import llama, mistral, moe, qwen\n":
            f"from sweep.target.families import {', '.join(sorted(('llama', 'mistral', 'moe', 'qwen', *names)))}\n",
        "moe.MIXTRAL, moe.QWEN3_MOE)": f"moe.MIXTRAL, moe.QWEN3_MOE, {', '.join(f'{n}.FAMILY' for n in names)})",
    }  # fmt: skip
    for old, new in edits.items():
        assert registry.count(old) == 1, f"the registry no longer reads {old!r}: update this test's edit"
        registry = registry.replace(old, new)
    (tree / REGISTRY).write_text(registry)


def test_a_made_up_family_is_its_module_and_a_registry_entry_and_the_planner_plans_it_whole(finished_run, tmp_path):
    """Two made-up families dropped into a copy of the project, each one module and one registry entry: a preset
    of Toyformer (QKV bias and QK-norm) and a Phi-3 config.json are planned whole (layout, memory, step time,
    megatron-core's configs, Megatron-LM's flags, the summary) by estimators that were not touched."""
    run_dir, phi3_dir = finished_run(), tmp_path / "phi3-mini"
    phi3_dir.mkdir()
    (phi3_dir / "config.json").write_text(json.dumps(PHI3_MINI))
    with pytest.raises(TargetError, match="model_type = 'phi3' cannot be planned"):
        load_target(str(phi3_dir), max_lr=3e-4)
    with pytest.raises(TargetError, match="unknown target 'toyformer-1b'"):
        load_target("toyformer-1b")

    tree = tmp_path / "tree"
    with_families(tree, "phi3", "toyformer")
    env = {**os.environ, "PYTHONPATH": str(tree)}
    done = subprocess.run([sys.executable, "-c", PLAN_BOTH, str(run_dir), str(phi3_dir)], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.returncode == 0, done.stderr
    phi3_plan, toyformer = RunDir(run_dir).plans()  # sorted by id, which starts with the target's name
    assert toyformer.path.name.startswith("toyformer-1b-") and phi3_plan.path.name.startswith("phi3-mini-")
    args = toyformer.megatron_args.read_text().splitlines()
    assert {"--add-qkv-bias", "--qk-layernorm", "--num-layers 24", "--seq-length 4096"} <= set(args)
    assert "--lr 4e-05" in args  # the plan's point (lr_fraction 0.1) x the preset's own max_lr
    summary = " ".join(toyformer.summary_md.read_text().replace("│", " ").split())
    shape = "24 layers, hidden 2048, FFN 5632, 16 heads / 4 KV, vocab 32000, seq 4096, QKV bias, QK-norm"
    assert f"toyformer-1b: {shape}; {total_params(TOYFORMER_1B) / 1e9:.2f} B parameters" in summary
    planned = json.loads(toyformer.plan_json.read_text())["target"]
    assert (planned["source"], planned["max_lr"]) == ("made up for the family test", 4e-4)

    phi3_model = phi3.FAMILY.shape(DecoderConfig.model_validate(PHI3_MINI), 4096)
    assert total_params(phi3_model) / 1e9 == pytest.approx(3.8, rel=0.01)  # the Phi-3 technical report's "3.8B"
    summary = " ".join(phi3_plan.summary_md.read_text().replace("│", " ").split())
    assert f"seq 4096; {total_params(phi3_model) / 1e9:.2f} B parameters" in summary
    assert json.loads(phi3_plan.plan_json.read_text())["target"]["source"].endswith("config.json read as Phi-3")


def test_a_windowed_target_on_an_image_without_transformer_engine_is_refused_naming_the_window(finished_run, capsys):
    """Only Transformer Engine's attention takes a sliding window in the entry: the plan says so before any job."""
    flags = ["--target", "mistral-7b", "--max-lr", "3e-4", "--no-transformer-engine"]
    assert main(["promote", "plan", str(finished_run()), *flags]) == 2
    assert "Transformer Engine's layers are needed for model.window_size=4096" in capsys.readouterr().err
