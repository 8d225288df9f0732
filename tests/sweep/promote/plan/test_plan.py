"""Plans of the 8B and 70B targets on 480 H100s: LR and blend follow the optimum, megatron-core's
configs accept them, the Megatron-LM arguments agree with plan.json, and the generated files match
the stored expected ones.

Regenerate the expected files after a deliberate change with
    CPT_SWEEP_REGENERATE=1 .venv/bin/pytest tests/sweep/promote/plan/test_plan.py
and review their diff.
"""

from __future__ import annotations

import math
import os
import shlex
from pathlib import Path

import pytest

from sweep.files.compat import SPEC
from sweep.files.config_file import load_config
from sweep.files.rundir import RunDir
from sweep.promote.errors import PromotionError
from sweep.promote.estimate.layout import LayoutRequest
from sweep.promote.launch.promotion import write_plan
from sweep.promote.plan.plan import Plan, make_plan
from sweep.promote.request.config import (
    DataPrefix,
    PromotionCheckpoint,
    PromotionConfig,
    PromotionData,
    ValidationPrefixes,
)
from sweep.run.tracking import TrackingConfig
from sweep.scale import head_width
from tests.conftest import REPO
from tests.sweep.promote.plan import megatron_lm
from tests.sweep.promote.promote_runs import write_run
from tests.sweep.scripted import spec_with
from train_entry.megatron.core_configs import core_configs, transformer_engine_settings
from train_entry.mix import MixRatio, blend_weights

EXPECTED = Path(__file__).parent / "expected"
CLUSTERS = REPO / "search_spaces" / "clusters"
PROMOTION_YAML = CLUSTERS.parent / "promotion" / "lr_mix_70b.yaml"
UNPUBLISHED_MAX_LR = 3e-4
"""The tests' max_lr for the presets whose makers publish none (the plan asks for --max-lr)."""
LLAMAS = {
    "llama3.1-8b": PromotionConfig(target="llama3.1-8b"),
    "llama3.1-70b": PromotionConfig(target="llama3.1-70b"),
    # The same cluster with an image that has no Transformer Engine.
    "llama3.1-70b-without-te": PromotionConfig(target="llama3.1-70b", transformer_engine=False),
}
FAMILIES = {
    name: PromotionConfig(target=name, max_lr=UNPUBLISHED_MAX_LR)
    for name in ("qwen2.5-3b", "qwen3-32b", "mistral-7b", "mixtral-8x7b")
}
UNEVEN = {
    # 126 layers on a power-of-two count of GPUs: only uneven first and last stages split them past PP 2.
    f"llama3.1-405b-{cluster}": PromotionConfig(target="llama3.1-405b", cluster=str(CLUSTERS / f"{cluster}.yaml"))
    for cluster in ("h100-256", "h200-256")
}
PROMOTIONS = LLAMAS | FAMILIES | UNEVEN
TARGETS = list(PROMOTIONS)


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    """A finished sweep of the shipped spec (its W&B tracking off), with the spec copy `sweep run` keeps."""
    run_dir = write_run(tmp_path_factory.mktemp("plans") / "runs" / "lr_mix")
    RunDir(run_dir).write_spec_copy(spec_with().model_copy(update={"tracking": TrackingConfig()}))
    return run_dir


@pytest.fixture(scope="module")
def plans(run_dir) -> dict[str, Plan]:
    return {name: make_plan(run_dir, config) for name, config in PROMOTIONS.items()}


@pytest.mark.parametrize("target", TARGETS)
def test_megatron_core_configs_instantiate_with_the_plans_layout(plans, target):
    plan = plans[target]
    transformer, optimizer, ddp = core_configs(plan.run)
    par = plan.chosen.parallelism
    assert plan.run.parallelism == par
    assert (transformer.tensor_model_parallel_size, transformer.pipeline_model_parallel_size) == (
        par.tensor,
        par.pipeline,
    )
    assert transformer.virtual_pipeline_model_parallel_size == par.virtual_pipeline
    assert transformer.context_parallel_size == par.context
    assert transformer.num_layers == plan.target.model.num_layers
    assert transformer.num_query_groups == plan.target.model.num_query_groups
    model = plan.target.model
    assert (transformer.add_qkv_bias, transformer.qk_layernorm) == (model.add_qkv_bias, model.qk_layernorm)
    assert transformer.window_size == (None if model.window_size is None else (model.window_size - 1, 0))
    assert transformer.num_moe_experts == (model.moe.num_experts if model.moe else None)
    assert transformer.expert_model_parallel_size == par.expert
    assert transformer.num_layers_in_first_pipeline_stage == par.first_stage_layers
    assert transformer.num_layers_in_last_pipeline_stage == par.last_stage_layers
    assert (optimizer.lr, optimizer.min_lr) == (plan.run.optimization.lr, plan.run.optimization.min_lr)
    assert ddp.use_distributed_optimizer and optimizer.use_distributed_optimizer
    assert par.data_parallel_size(plan.cluster.gpus) == plan.chosen.data_parallel


@pytest.mark.parametrize("target", list(LLAMAS | FAMILIES))
def test_the_plan_fits_480_h100s_and_has_the_reference_schedule(plans, target):
    plan = plans[target]
    assert plan.cluster.gpus == 480
    assert all(layout.memory.total_gb < 80 for layout in plan.layouts)
    assert len(plan.layouts) >= 2  # the chosen layout and the next best
    opt = plan.run.optimization
    assert opt.train_iters == math.ceil(10**12 / (1440 * 8192)) == 84772
    assert opt.warmup_iters == round(84772 * 0.01)
    assert plan.run.parallelism.global_batch_size == 1440
    assert plan.estimate.days == pytest.approx(plan.estimate.step_s * 84772 / 86400)
    assert plan.estimate.gpu_hours == pytest.approx(plan.estimate.step_s * 84772 * 480 / 3600)
    assert 0 < plan.estimate.effective_mfu <= plan.assumptions.mfu  # the 3B at DP 480 hides all its traffic


@pytest.mark.parametrize(
    ("lr_fraction", "mix", "share"), [(0.1, "1:1", 0.1), (0.1734, "1:4", 0.0), (0.0612, "2:1", 0.25)]
)
def test_lr_and_blend_weights_follow_the_optimum(tmp_path, lr_fraction, mix, share):
    run_dir = write_run(tmp_path / "lr_mix", lr_fraction=lr_fraction, mix=mix, non_english_share=share)
    plan = make_plan(run_dir, PromotionConfig(target="llama3.1-70b"))
    opt = plan.run.optimization
    assert opt.lr == pytest.approx(lr_fraction * 1.5e-4, rel=1e-6)
    assert opt.min_lr == pytest.approx(opt.lr * 0.1, rel=1e-6)  # the proxy's min_lr_ratio
    weights = {source.name: source.weight for source in plan.run.data.blend}
    expected = blend_weights(MixRatio.parse(mix), share)
    assert weights.keys() == expected.keys()
    for name, weight in expected.items():
        assert weights[name] == pytest.approx(weight, rel=1e-6)
    assert (plan.sweep.promoted.lr_fraction, str(plan.sweep.promoted.mix)) == (lr_fraction, mix)


def test_a_sides_weight_is_split_over_its_prefixes_by_tokens_else_equally(run_dir):
    data = PromotionData(
        general=[DataPrefix(prefix="/d/en_a", tokens=3e11), DataPrefix(prefix="/d/en_b", tokens=1e11)],
        non_english=[DataPrefix(prefix="/d/multi")],
        domain=[DataPrefix(prefix="/d/listings"), DataPrefix(prefix="/d/reviews", tokens=5e10)],
        tokenizer="/models/llama",
        valid=ValidationPrefixes(general="/d/en_valid", domain="/d/listings_valid", non_english="/d/multi_valid"),
    )
    config = PromotionConfig(
        target="llama3.1-8b", data=data, checkpoint=PromotionCheckpoint(base_dir="/ckpt/base", save_dir="/ckpt/run")
    )
    plan = make_plan(run_dir, config)
    weights = {source.prefix: source.weight for source in plan.run.data.blend}
    assert weights == pytest.approx(
        {"/d/en_a": 0.45 * 0.75, "/d/en_b": 0.45 * 0.25, "/d/multi": 0.05, "/d/listings": 0.25, "/d/reviews": 0.25}
    )  # one domain prefix has no token count, so the domain side is split equally
    assert plan.placeholders == []
    plan.require_real_inputs()


def test_missing_inputs_are_marked_placeholders_that_a_submission_refuses(plans):
    plan = plans["llama3.1-70b"]
    assert plan.placeholders == [
        "data prefix general", "data prefix domain", "data prefix non_english", "tokenizer", "base checkpoint", "save dir",
        "validation prefix general", "validation prefix domain", "validation prefix non_english",
    ]  # fmt: skip
    assert all(item.prefix.startswith("/PLACEHOLDER/") for item in plan.validation)
    assert all(source.prefix.startswith("/PLACEHOLDER/") for source in plan.run.data.blend)
    with pytest.raises(PromotionError, match="still has placeholders for: data prefix general"):
        plan.require_real_inputs()


def test_the_plan_id_depends_only_on_what_decides_the_run(run_dir, plans, tmp_path):
    plan = plans["llama3.1-70b"]
    assert plan.id.startswith("llama3.1-70b-h100-480-") and len(plan.id.rsplit("-", 1)[1]) == 8
    with_prefix = PromotionConfig(target="llama3.1-70b", data=PromotionData(domain=[DataPrefix(prefix="/d/x")]))
    assert make_plan(run_dir, with_prefix).id != plan.id  # other data, another plan
    assert make_plan(run_dir, PromotionConfig(target="llama3.1-70b")).id == plan.id  # the same request, the same id
    assert make_plan(run_dir, PromotionConfig(target="llama3.1-70b", tokens=2 * 10**12)).id != plan.id
    pinned = PromotionConfig(target="llama3.1-70b", layout=LayoutRequest(tensor=8))
    assert make_plan(run_dir, pinned).id != plan.id
    other = write_run(tmp_path / "lr_mix", lr_fraction=0.12)
    assert make_plan(other, PromotionConfig(target="llama3.1-70b")).id != plan.id


def test_without_transformer_engine_the_plan_leaves_out_sequence_and_context_parallelism_and_says_the_cost(
    plans, tmp_path
):
    with_te, without = plans["llama3.1-70b"], plans["llama3.1-70b-without-te"]
    assert not without.cluster.transformer_engine and with_te.cluster.transformer_engine
    assert without.id != with_te.id
    assert all(
        not layout.parallelism.sequence_parallel and layout.parallelism.context == 1 for layout in without.layouts
    )
    assert transformer_engine_settings(without.run) == []
    # What the search would choose with TE is the TE plan's choice; going without costs its step-time difference.
    assert without.with_transformer_engine == with_te.chosen and with_te.with_transformer_engine is None
    extra_s = without.estimate.step_s - with_te.estimate.step_s
    assert extra_s > 0
    summary = " ".join((write_plan(without, tmp_path).path / "summary.md").read_text().replace("│", " ").split())
    assert f"going without costs {extra_s:.2f} s per step (+{extra_s / with_te.estimate.step_s:.1%})" in summary
    args = parse_args_txt(write_plan(without, tmp_path).megatron_args.read_text())
    assert args["--transformer-impl"] == ["local"] and "--sequence-parallel" not in args


def test_context_parallelism_pinned_for_an_image_without_transformer_engine_is_refused(run_dir):
    config = PromotionConfig(target="llama3.1-70b", transformer_engine=False, layout=LayoutRequest(context=2))
    with pytest.raises(PromotionError, match=r"context parallel size 2 needs Transformer Engine's layers"):
        make_plan(run_dir, config)


def test_a_written_plan_reads_back_unchanged(plans, tmp_path):
    plan = plans["llama3.1-8b"]
    directory = write_plan(plan, tmp_path)
    assert Plan.read(directory.plan_json) == plan == Plan.read(directory.path)


def test_a_sweep_without_a_point_to_promote_is_refused(tmp_path):
    run_dir = write_run(tmp_path / "lr_mix", feasible=False)
    with pytest.raises(
        PromotionError, match=r"has no point to promote: no pick \(no surrogate: .*no completed trial is within"
    ):
        make_plan(run_dir, PromotionConfig(target="llama3.1-8b"))
    with pytest.raises(PromotionError, match="is not a finished sweep: no best.json"):
        make_plan(tmp_path / "empty", PromotionConfig(target="llama3.1-8b"))


def parse_args_txt(text: str) -> dict[str, list[str]]:
    flags: dict[str, list[str]] = {}
    for line in text.splitlines():
        flag, *values = shlex.split(line)
        assert flag not in flags, f"{flag} given twice"
        flags[flag] = values
    return flags


@pytest.mark.parametrize("target", TARGETS)
def test_megatron_lm_arguments_agree_with_plan_json(plans, target, tmp_path):
    directory = write_plan(plans[target], tmp_path)
    plan = Plan.read(directory.plan_json)  # what was written, not the object in memory
    args = parse_args_txt(directory.megatron_args.read_text())
    run, par, opt = plan.run, plan.run.parallelism, plan.run.optimization
    model = run.model

    def value(flag: str) -> str:
        assert len(args[flag]) == 1, flag
        return args[flag][0]

    assert int(value("--num-layers")) == model.num_layers
    assert int(value("--hidden-size")) == model.hidden_size
    assert int(value("--ffn-hidden-size")) == model.ffn_hidden_size
    assert int(value("--num-attention-heads")) == model.num_attention_heads
    assert int(value("--num-query-groups")) == model.num_query_groups
    assert int(value("--seq-length")) == model.seq_length
    assert int(value("--rotary-base")) == model.rotary_base
    assert int(value("--tensor-model-parallel-size")) == par.tensor
    assert int(value("--pipeline-model-parallel-size")) == par.pipeline
    if par.virtual_pipeline is None:
        assert "--num-layers-per-virtual-pipeline-stage" not in args
    else:
        layers_per_chunk = int(value("--num-layers-per-virtual-pipeline-stage"))
        assert layers_per_chunk * par.pipeline * par.virtual_pipeline == model.num_layers
    assert int(value("--context-parallel-size")) == par.context
    assert ("--sequence-parallel" in args) == par.sequence_parallel
    assert int(value("--micro-batch-size")) == par.micro_batch_size
    assert int(value("--global-batch-size")) == par.global_batch_size
    assert int(value("--train-iters")) == int(value("--lr-decay-iters")) == opt.train_iters
    assert int(value("--lr-warmup-iters")) == opt.warmup_iters
    assert float(value("--lr")) == opt.lr and float(value("--min-lr")) == opt.min_lr
    assert value("--lr-decay-style") == opt.decay_style
    pairs = args["--train-data-path"]
    assert [(float(w), p) for w, p in zip(pairs[::2], pairs[1::2])] == [(s.weight, s.prefix) for s in run.data.blend]
    assert args["--valid-data-path"] == [item.prefix for item in plan.validation]
    assert args["--multiple-validation-sets"] == args["--full-validation"] == []
    assert "--data-path" not in args and "--split" not in args
    assert value("--tokenizer-model") == run.data.tokenizer
    assert value("--save") == value("--load") == run.checkpoint.save_dir
    assert value("--pretrained-checkpoint") == run.checkpoint.base_dir
    assert int(value("--save-interval")) == run.checkpoint.save_interval
    assert int(value("--padded-vocab-size")) == model.vocab_size  # the checkpoint's rows, not len(tokenizer)'s
    assert int(value("--kv-channels")) == head_width(model)
    assert ("--untie-embeddings-and-output-weights" in args) == model.untie_embeddings_and_output_weights
    assert ("--add-qkv-bias" in args, "--qk-layernorm" in args) == (model.add_qkv_bias, model.qk_layernorm)
    assert args.get("--window-size") == (None if model.window_size is None else [f"{model.window_size - 1},0"])
    for flag, layers in (
        ("--decoder-first-pipeline-num-layers", par.first_stage_layers),
        ("--decoder-last-pipeline-num-layers", par.last_stage_layers),
    ):
        assert args.get(flag) == (None if layers is None else [str(layers)])
    moe = model.moe
    if moe is None:
        assert not any(flag.startswith(("--moe-", "--num-experts", "--expert-")) for flag in args)
    else:
        assert (int(value("--num-experts")), int(value("--moe-router-topk"))) == (moe.num_experts, moe.router_topk)
        assert int(value("--moe-ffn-hidden-size")) == moe.expert_ffn_hidden_size
        assert int(value("--expert-model-parallel-size")) == par.expert
        assert int(value("--expert-tensor-parallel-size")) == (par.expert_tensor or par.tensor)
        assert value("--moe-token-dispatcher-type") == "alltoall" and "--moe-grouped-gemm" in args


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", ["pretrain_gpt_args.txt", "summary.md"])
def test_generated_files_match_the_stored_expected_ones(plans, target, name, tmp_path):
    produced = (write_plan(plans[target], tmp_path).path / name).read_text()
    expected = EXPECTED / target / name
    if os.environ.get("CPT_SWEEP_REGENERATE"):
        expected.parent.mkdir(parents=True, exist_ok=True)
        expected.write_text(produced)
    assert produced == expected.read_text(), f"{expected} differs; see this module's docstring to regenerate"


@pytest.mark.parametrize("target", TARGETS)
def test_the_plan_reads_whole_in_an_80_column_terminal(plans, target):
    """One table of the layouts and their step times folded each layout over four lines, and at 80 columns rich
    cut its numbers to "30.…"; printed uncropped, nothing may pass the terminal's edge or end in "…"."""
    from rich.console import Console

    from sweep.promote.plan.summary import summary_tables

    console = Console(width=80, record=True)
    console.print(summary_tables(plans[target]), crop=False)
    text = console.export_text()
    assert "…" not in text and max(len(line.rstrip()) for line in text.splitlines()) <= 80
    chosen = plans[target].chosen
    row = next(line.split() for line in text.splitlines() if line.split()[:1] == ["chosen"])
    assert row[1:3] == [str(chosen.parallelism.tensor), str(chosen.parallelism.pipeline)]
    assert row[-1] == f"{chosen.step.total_s:.2f}"


@pytest.mark.parametrize("target", TARGETS)
def test_megatron_lm_own_parser_accepts_the_arguments(plans, target, tmp_path, monkeypatch):
    """Where Megatron-LM's training package is importable (a GPU cluster's image, or a checkout of Megatron-LM
    core_v0.16.1 on PYTHONPATH with triton installed), its own parse_args and validate_args read the arguments;
    elsewhere skipped, naming what is missing (tests/sweep/promote/plan/megatron_lm.py)."""
    arguments = megatron_lm.megatron_training()
    plan = plans[target]
    tokens = shlex.split(write_plan(plan, tmp_path).megatron_args.read_text())
    args = megatron_lm.parsed_args(arguments, tokens, world_size=plan.cluster.gpus, monkeypatch=monkeypatch)
    assert (args.tensor_model_parallel_size, args.pipeline_model_parallel_size) == (
        plan.run.parallelism.tensor,
        plan.run.parallelism.pipeline,
    )
    assert (args.lr, args.train_iters, args.global_batch_size) == (
        plan.run.optimization.lr,
        plan.run.optimization.train_iters,
        1440,
    )
    assert args.ddp_bucket_size == plan.run.parallelism.ddp_bucket_size
    # Each validation set apart, unweighted, in the plan's order: what evaluate_and_print_results logs as
    # "validation-<i>", and how Megatron-LM's own helper hands the sets to megatron-core's dataset builder.
    from megatron.training.utils import get_blend_and_blend_per_split

    assert args.multiple_validation_sets and args.full_validation and args.exit_signal_handler
    blend, (train, valid, test) = get_blend_and_blend_per_split(args)
    assert blend is None and test is None
    assert valid == ([item.prefix for item in plan.validation], None)
    assert train[0] == [source.prefix for source in plan.run.data.blend]
    assert args.transformer_impl == ("transformer_engine" if plan.cluster.transformer_engine else "local")
    assert args.data_parallel_size == plan.chosen.data_parallel
    model, par = plan.run.model, plan.run.parallelism
    assert (args.add_qkv_bias, args.qk_layernorm) == (model.add_qkv_bias, model.qk_layernorm)
    assert (args.padded_vocab_size, args.kv_channels) == (model.vocab_size, head_width(model))
    assert args.untie_embeddings_and_output_weights == model.untie_embeddings_and_output_weights
    assert args.window_size == (None if model.window_size is None else (model.window_size - 1, 0))
    assert (args.decoder_first_pipeline_num_layers, args.decoder_last_pipeline_num_layers) == (
        par.first_stage_layers,
        par.last_stage_layers,
    )
    assert (args.num_experts, args.expert_model_parallel_size) == (model.moe and model.moe.num_experts, par.expert)
    if model.moe is not None:
        assert (args.moe_router_topk, args.moe_ffn_hidden_size) == (
            model.moe.router_topk,
            model.moe.expert_ffn_hidden_size,
        )
        assert args.expert_tensor_parallel_size == (par.expert_tensor or par.tensor)
        assert args.moe_grouped_gemm and args.moe_token_dispatcher_type == "alltoall"
        assert args.moe_router_dtype == "fp32"


def test_a_full_run_check_that_fails_is_one_line_naming_its_key():
    from pydantic import ValidationError

    from sweep.files.config_file import one_line
    from train_entry.megatron.config import Data

    with pytest.raises(ValidationError) as failed:
        Data(blend=[], tokenizer=3, split="1,2")
    assert one_line(failed.value) == "Data.blend: List should have at least 1 item after validation, not 0 (and 1 more)"


def test_a_sweep_of_megatron_prefixes_promotes_them_without_placeholders(tmp_path):
    """The proxies read the full run's own prefixes, so the plan's --data-path names them, weighted by tokens."""
    import yaml
    from megatron.core.datasets.indexed_dataset import DType, IndexedDatasetBuilder

    run_dir = write_run(tmp_path / "runs" / "megatron")
    data, tokens = {}, {"general": [300, 100], "non_english": [50], "domain": [80]}
    for side, counts in tokens.items():
        prefixes = []
        for number, count in enumerate(counts):
            prefix = tmp_path / "lustre" / f"{side}_{number}_text_document"
            prefix.parent.mkdir(exist_ok=True)
            builder = IndexedDatasetBuilder(f"{prefix}.bin", dtype=DType.optimal_dtype(512))
            builder.add_document(list(range(count)), [count])
            builder.finalize(f"{prefix}.idx")
            prefixes.append(str(prefix))
        data[side] = {"train": prefixes, "valid": prefixes[0], "tokenizer": "/models/llama"}
    (run_dir / "spec.yaml").write_text(yaml.safe_dump(SPEC.stamped({"data": data})))
    checkpoint = PromotionCheckpoint(base_dir="/ckpt/base", save_dir="/ckpt/run")
    given = PromotionData(domain=[DataPrefix(prefix="/d/listings")])  # a side the request names keeps its own

    plan = make_plan(run_dir, PromotionConfig(target="llama3.1-8b", checkpoint=checkpoint, data=given))

    weights = {Path(source.prefix).name: source.weight for source in plan.run.data.blend}
    assert weights == pytest.approx(
        {"general_0_text_document": 0.45 * 0.75, "general_1_text_document": 0.45 * 0.25,
         "non_english_0_text_document": 0.05, "listings": 0.5}
    )  # fmt: skip
    assert plan.run.data.tokenizer == "/models/llama"
    assert plan.placeholders == []
    # The held-out text the proxies were measured on is the full run's, each side apart, in Megatron-LM's order.
    assert [(item.side, Path(item.prefix).name) for item in plan.validation] == [
        ("general", "general_0_text_document"), ("domain", "domain_0_text_document"),
        ("non_english", "non_english_0_text_document"),
    ]  # fmt: skip
    other = PromotionData(domain=given.domain, valid=ValidationPrefixes(general="/team/en_valid"))
    replanned = make_plan(run_dir, PromotionConfig(target="llama3.1-8b", checkpoint=checkpoint, data=other))
    assert replanned.validation[0].prefix == "/team/en_valid"  # the team's own set wins over the sweep's
    assert replanned.id != plan.id  # another validation set is another plan


def test_a_target_whose_heads_are_not_hidden_over_heads_wide_plans_with_kv_channels(run_dir, tmp_path):
    """Qwen 3 32B's shape: 64 heads of 128 over a hidden size of 5120, which Megatron would otherwise split into 80."""
    target = tmp_path / "qwen3-32b.yaml"
    target.write_text(
        "name: qwen3-32b\nmax_lr: 3.0e-4\npretrain_tokens: 3.6e+13\nsource: Qwen3 config.json\nmodel:\n"
        "  num_layers: 64\n  hidden_size: 5120\n  ffn_hidden_size: 25600\n  num_attention_heads: 64\n"
        "  num_query_groups: 8\n  kv_channels: 128\n  vocab_size: 151936\n  seq_length: 4096\n  rotary_base: 1000000\n"
        "  rope_scaling_factor: null\n  norm_epsilon: 1.0e-6\n"
    )
    plan = make_plan(run_dir, PromotionConfig(target=str(target)))
    args = parse_args_txt(write_plan(plan, tmp_path).megatron_args.read_text())
    assert args["--kv-channels"] == ["128"] and args["--hidden-size"] == ["5120"]
    transformer, _, _ = core_configs(plan.run)
    assert transformer.kv_channels == 128
    llama = write_plan(make_plan(run_dir, PROMOTIONS["llama3.1-8b"]), tmp_path).megatron_args.read_text()
    llama = parse_args_txt(llama)
    assert llama["--kv-channels"] == ["128"]  # hidden / heads, given all the same: nothing left to derive


def test_each_input_that_makes_a_plan_different_changes_its_id(run_dir, plans):
    # Seen by a user: the default 70B plan and lr_mix_70b.yaml's (other data, tokenizer, checkpoints) shared an id.
    base = PromotionConfig(target="llama3.1-70b")
    changed = {
        "data": {"data": PromotionData(general=[DataPrefix(prefix="/g/a")])},
        "tokenizer": {"data": PromotionData(tokenizer="/models/tok")},
        "split": {"data": PromotionData(split="98,2,0")},
        "base checkpoint": {"checkpoint": PromotionCheckpoint(base_dir="/ckpt/base")},
        "save dir": {"checkpoint": PromotionCheckpoint(save_dir="/ckpt/run")},
        "warmup": {"warmup_fraction": 0.02},
        "target": {"target": "llama3.1-8b"},
        "batch": {"global_batch_tokens": 2 * base.global_batch_tokens},
    }
    ids = {name: make_plan(run_dir, base.model_copy(update=update)).id for name, update in changed.items()}
    assert plans["llama3.1-70b"].id not in ids.values() and len(set(ids.values())) == len(ids)
    from_yaml = load_config(PROMOTION_YAML, PromotionConfig, kind="promotion config")
    assert make_plan(run_dir, from_yaml).id != plans["llama3.1-70b"].id


def test_another_plan_is_never_written_over_an_existing_id(run_dir, plans, tmp_path):
    plan = plans["llama3.1-70b"]
    write_plan(plan, tmp_path)
    write_plan(plan, tmp_path)  # the same plan again: rewritten in place
    # A plan.json left under another's id by a different request (as before the id covered the data): not overwritten.
    other = make_plan(run_dir, PromotionConfig(target="llama3.1-70b", data=PromotionData(tokenizer="/models/tok")))
    directory = write_plan(other, tmp_path)
    directory.plan_json.write_text(
        (write_plan(plan, tmp_path).plan_json).read_text().replace(plan.id, other.id), encoding="utf-8"
    )
    before = directory.plan_json.read_text()
    with pytest.raises(PromotionError, match=r"another plan under id .* differs in: plan.json's run.data.tokenizer"):
        write_plan(other, tmp_path)
    assert directory.plan_json.read_text() == before


def test_arguments_edited_under_a_plans_id_are_not_written_over(plans, tmp_path):
    """pretrain_gpt_args.txt a job may have been launched with, edited by hand (or rendered by another cpt-sweep):
    planning the same request again says which flags differ and writes nothing."""
    directory = write_plan(plans["llama3.1-70b"], tmp_path)
    edited = directory.megatron_args.read_text().replace("--eval-iters 10\n", "--eval-iters 20\n")
    directory.megatron_args.write_text(edited)
    with pytest.raises(PromotionError, match=r"differs in: pretrain_gpt_args.txt --eval-iters 20 -> 10\)"):
        write_plan(plans["llama3.1-70b"], tmp_path)
    assert directory.megatron_args.read_text() == edited
