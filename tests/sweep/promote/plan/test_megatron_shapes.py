"""The model Megatron-LM builds from a plan's arguments has the base checkpoint's shapes, for every target family.

Megatron-LM derives some shapes rather than reading them: the embedding's rows from len(tokenizer), padded to a
multiple of --make-vocab-size-divisible-by x TP unless --padded-vocab-size gives them; each head's width from hidden
/ heads unless --kv-channels; the FFN's from the hidden size unless --ffn-hidden-size; the experts' from the FFN's;
RoPE's rotated width from the head's and --rotary-percent. A converted base (Megatron-Bridge) loads only into the
shapes it was converted from, which are its config.json's as transformers builds them. So each preset and each
released config.json is planned, its arguments read as Megatron-LM reads them with the released tokenizer's length,
and every shape compared with the config's.

Where Megatron-LM's training package is importable, its own parse_args, validate_args and padding read the arguments
(tests/sweep/promote/plan/megatron_lm.py), and the copy below is checked against them; elsewhere the copy stands in.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path

import pytest

from sweep.promote.plan.megatron_args import args_text
from sweep.promote.plan.plan import Plan, make_plan
from sweep.promote.request.config import PromotionConfig
from sweep.target.families.registry import PRESETS
from tests.sweep.promote.plan import megatron_lm
from tests.sweep.promote.promote_runs import write_run
from tests.sweep.target.families.released_configs import CONFIGS, TOKENIZER_LENGTHS

MAX_LR = 3e-4
"""A max_lr for the targets whose makers publish none: it changes no shape."""
TARGETS = [("preset", name) for name in PRESETS] + [("config.json", name) for name in CONFIGS]


def checkpoint_shapes(config: dict) -> dict[str, int]:
    """The shapes transformers builds from a config.json, and so a checkpoint converted from those weights holds
    (LlamaModel, Qwen2Model, Qwen3Model, MistralModel, MixtralModel, Qwen3MoeModel): embedding and output rows
    vocab_size; heads head_dim wide (hidden_size / heads without it); RoPE over head_dim x partial_rotary_factor."""
    head = config.get("head_dim") or config["hidden_size"] // config["num_attention_heads"]
    experts = config.get("moe_intermediate_size", config["intermediate_size"])
    return {
        "embedding rows": config["vocab_size"],
        "output rows": config["vocab_size"],
        "head width": head,
        "query width": config["num_attention_heads"] * head,
        "key/value width": config.get("num_key_value_heads", config["num_attention_heads"]) * head,
        "FFN width": config["intermediate_size"],
        "expert FFN width": experts if "num_experts" in config or "num_local_experts" in config else 0,
        "rotary width": int(head * config.get("partial_rotary_factor", 1.0)),
        "layers": config["num_hidden_layers"],
    }


def megatron_shapes(args, padded_vocab_size: int) -> dict[str, int]:
    """The same shapes of the model Megatron-LM builds, from its arguments after validate_args (megatron-core's
    GPTModel: the embedding and output layer padded_vocab_size rows, heads kv_channels wide, RotaryEmbedding over
    int(kv_channels x rotary_percent))."""
    groups = args.num_query_groups if args.group_query_attention else args.num_attention_heads
    return {
        "embedding rows": padded_vocab_size,
        "output rows": padded_vocab_size,
        "head width": args.kv_channels,
        "query width": args.num_attention_heads * args.kv_channels,
        "key/value width": groups * args.kv_channels,
        "FFN width": args.ffn_hidden_size,
        "expert FFN width": args.moe_ffn_hidden_size if args.num_experts else 0,
        "rotary width": int(args.kv_channels * args.rotary_percent),
        "layers": args.num_layers,
    }


class CopiedArgs:
    """What Megatron-LM derives from a pretrain_gpt.py command line, in a copy of its rules (Megatron-LM
    core_v0.16.1, megatron/training/arguments.py validate_args: kv_channels = hidden_size // num_attention_heads and,
    under --swiglu, ffn_hidden_size = int(4 x hidden x 2 / 3 / 64) x 64 when not given; moe_ffn_hidden_size =
    ffn_hidden_size when not given; --rotary-percent 1.0 and --make-vocab-size-divisible-by 128 by default). Only the
    flags the plans use are read."""

    def __init__(self, tokens: list[str]):
        flags: dict[str, list[str]] = {}
        for token in tokens:
            if token.startswith("--"):
                values = flags.setdefault(token, [])
            else:
                values.append(token)
        self.flags = flags
        self.num_layers = self._int("--num-layers")
        self.hidden_size = self._int("--hidden-size")
        self.num_attention_heads = self._int("--num-attention-heads")
        self.group_query_attention = "--group-query-attention" in flags
        self.num_query_groups = self._int("--num-query-groups", 1)
        self.kv_channels = self._int("--kv-channels", self.hidden_size // self.num_attention_heads)
        default_ffn = int((4 * self.hidden_size * 2 / 3) / 64) * 64 if "--swiglu" in flags else 4 * self.hidden_size
        self.ffn_hidden_size = self._int("--ffn-hidden-size", default_ffn)
        self.num_experts = self._int("--num-experts", None)
        self.moe_ffn_hidden_size = self._int("--moe-ffn-hidden-size", self.ffn_hidden_size)
        self.rotary_percent = float(flags.get("--rotary-percent", ["1.0"])[0])
        self.tensor_model_parallel_size = self._int("--tensor-model-parallel-size", 1)
        self.make_vocab_size_divisible_by = self._int("--make-vocab-size-divisible-by", 128)
        self.padded_vocab_size = self._int("--padded-vocab-size", None)

    def _int(self, flag: str, default: int | None = 0) -> int | None:
        return int(self.flags[flag][0]) if flag in self.flags else default


def copied_padded_vocab_size(args: CopiedArgs, tokenizer_length: int) -> int:
    """Megatron-LM core_v0.16.1's rule (megatron/training/tokenizer/tokenizer.py: build_tokenizer keeps a given
    --padded-vocab-size, else _vocab_size_with_padding rounds len(tokenizer) up to a multiple of
    make_vocab_size_divisible_by x tensor_model_parallel_size); main's megatron/core/tokenizers/utils/
    build_tokenizer.py (_set_padded_vocab_size, vocab_size_with_padding) is the same rule."""
    if args.padded_vocab_size is not None:
        return args.padded_vocab_size
    multiple = args.make_vocab_size_divisible_by * args.tensor_model_parallel_size
    return math.ceil(tokenizer_length / multiple) * multiple


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory) -> Path:
    return write_run(tmp_path_factory.mktemp("shapes") / "runs" / "lr_mix")


@pytest.fixture(scope="module")
def plans(run_dir, tmp_path_factory) -> dict[tuple[str, str], Plan]:
    """Each preset by its name, each released config.json as a model directory."""
    models = tmp_path_factory.mktemp("models")
    planned = {}
    for kind, name in TARGETS:
        target = name
        if kind == "config.json":
            (models / name).mkdir()
            (models / name / "config.json").write_text(json.dumps(CONFIGS[name]))
            target = str(models / name)
        planned[kind, name] = make_plan(run_dir, PromotionConfig(target=target, max_lr=MAX_LR))
    return planned


def _tokens(plan: Plan) -> list[str]:
    return shlex.split(args_text(plan))


@pytest.mark.parametrize(("kind", "name"), TARGETS)
def test_the_model_megatron_lm_builds_has_the_base_checkpoints_shapes(plans, kind, name):
    """Fails for a plan that leaves the embedding to Megatron-LM's padding: Qwen2.5 3B's 151,665 tokens at TP 1 pad
    to 151,680 rows, not the checkpoint's 151,936."""
    config, length = CONFIGS[name], TOKENIZER_LENGTHS[name]
    assert length <= config["vocab_size"]  # every token of the released tokenizer has its row
    args = CopiedArgs(_tokens(plans[kind, name]))
    assert megatron_shapes(args, copied_padded_vocab_size(args, length)) == checkpoint_shapes(config)


@pytest.mark.parametrize(("kind", "name"), TARGETS)
def test_megatron_lm_own_code_builds_the_base_checkpoints_shapes(plans, kind, name, monkeypatch):
    """Megatron-LM's own parse_args, validate_args and vocabulary padding (skipped, naming what is missing, where its
    training package does not import); the copy above must agree with them."""
    arguments = megatron_lm.megatron_training()
    plan, length = plans[kind, name], TOKENIZER_LENGTHS[name]
    args = megatron_lm.parsed_args(arguments, _tokens(plan), world_size=plan.cluster.gpus, monkeypatch=monkeypatch)
    built = megatron_shapes(args, megatron_lm.padded_vocab_size(args, length))
    assert built == checkpoint_shapes(CONFIGS[name])
    copied = CopiedArgs(_tokens(plan))
    assert megatron_shapes(copied, copied_padded_vocab_size(copied, length)) == built


@pytest.mark.parametrize(
    ("flags", "length", "padded"),
    [
        # Qwen2.5's and Qwen3's tokenizers as the plans that gave only a divisor had them padded (TP 1 and TP 2):
        (["--make-vocab-size-divisible-by", "128", "--tensor-model-parallel-size", "1"], 151665, 151680),
        (["--make-vocab-size-divisible-by", "128", "--tensor-model-parallel-size", "2"], 151669, 151808),
        (["--tensor-model-parallel-size", "8"], 151669, 152576),  # 149 x 128 x 8, past the checkpoint's 151,936
        (["--padded-vocab-size", "151936", "--tensor-model-parallel-size", "8"], 151669, 151936),
    ],
)
def test_the_copied_padding_is_megatron_lms_rule(flags, length, padded, monkeypatch):
    """The copy against figures of Megatron-LM's rule; where Megatron-LM is importable, against its own function."""
    base = ["--num-layers", "2", "--hidden-size", "64", "--num-attention-heads", "4", "--seq-length", "64",
            "--max-position-embeddings", "64", "--micro-batch-size", "1", "--global-batch-size", "8"]  # fmt: skip
    copied = CopiedArgs(base + flags)
    assert copied_padded_vocab_size(copied, length) == padded
    try:
        arguments = megatron_lm.megatron_training()
    except pytest.skip.Exception:
        return  # the figures above stand alone
    tensor = copied.tensor_model_parallel_size
    args = megatron_lm.parsed_args(arguments, base + flags, world_size=tensor, monkeypatch=monkeypatch)
    assert megatron_lm.padded_vocab_size(args, length) == padded
