"""The plan as Megatron-LM `pretrain_gpt.py` arguments, for teams that run Megatron-LM directly.

Flag names are those of Megatron-LM's megatron/training/arguments.py (core_v0.16.1). Continued
pretraining needs one argument list for the first launch and every relaunch: `--load` and `--save`
name the run's own checkpoint directory and `--pretrained-checkpoint` the base. While the run's
directory holds no checkpoint, Megatron-LM loads the base with finetune semantics (weights only:
fresh optimizer, iteration 0, no RNG state); once it holds one, a relaunch resumes from it with
optimizer, scheduler and iteration count (megatron/training/checkpointing.py, load_checkpoint).
"""

from __future__ import annotations

import shlex

from sweep.promote.plan.plan import Plan
from sweep.scale import head_width
from train_entry.megatron.core_configs import recompute_module

PRETRAIN_SCRIPT = "pretrain_gpt.py"


def megatron_args(plan: Plan) -> list[list[str]]:
    """One group per flag: the flag and its values."""
    run = plan.run
    par, opt, data, ckpt = (run.parallelism, run.optimization, run.data, run.checkpoint)
    args = _model(plan)
    args += [*_layer_implementation(plan), ["--bf16"] if opt.bf16 else [], *_layout(plan)]
    args += [
        ["--use-distributed-optimizer"],
        ["--overlap-grad-reduce"],
        ["--ddp-bucket-size", str(par.ddp_bucket_size)],
        ["--overlap-param-gather"],
        ["--accumulate-allreduce-grads-in-fp32"] if opt.bf16 else [],
        ["--micro-batch-size", str(par.micro_batch_size)],
        ["--global-batch-size", str(par.global_batch_size)],
        *_optimization(plan),
        ["--seed", str(run.seed)],
        *_data(plan),
        ["--tokenizer-type", "HuggingFaceTokenizer"],
        ["--tokenizer-model", data.tokenizer],
        # Checkpoints: start from the base, then resume from the run's own (see the module docstring).
        ["--save", ckpt.save_dir],
        ["--load", ckpt.save_dir],
        ["--save-interval", str(ckpt.save_interval)],
        ["--ckpt-format", "torch_dist"],
        # A SIGTERM (a scheduler's preemption, Ray's stop_job) saves a checkpoint before the process exits.
        ["--exit-signal-handler"],
    ]
    if ckpt.base_dir is not None:
        args.append(["--pretrained-checkpoint", ckpt.base_dir])
    args += [["--log-interval", str(run.log_interval)], ["--eval-iters", str(run.eval_iters)]]
    if run.eval_interval is not None:
        args.append(["--eval-interval", str(run.eval_interval)])
    return [group for group in args + _wandb(plan) if group]


def _data(plan: Plan) -> list[list[str]]:
    """The training blend and the validation sets apart (core_v0.16.1, megatron/training/training.py and
    blended_megatron_dataset_builder.py): --train-data-path takes the weight/prefix pairs (normalised by Megatron as
    by megatron-core's builder); --valid-data-path one prefix per set, without weights, each evaluated whole and
    logged as its own loss ("validation-<i> loss at iteration ...", i its place here), which needs
    --multiple-validation-sets and --full-validation (Megatron-LM raises without the latter). The per-split paths
    exclude --data-path and --split: the training prefixes are trained on whole, the held-out text is apart."""
    blend = plan.run.data.blend
    return [
        ["--train-data-path", *[item for source in blend for item in (_number(source.weight), source.prefix)]],
        ["--valid-data-path", *[item.prefix for item in plan.validation]],
        ["--multiple-validation-sets"],
        ["--full-validation"],
    ]


def _wandb(plan: Plan) -> list[list[str]]:
    """Megatron-LM's W&B flags (core_v0.16.1 megatron/training/training_config.py): the sweep's project, the plan
    id as the run's name, its files beside the checkpoints. Megatron-LM logs from the last rank and has no flag for
    a group or job type; the mode is WANDB_MODE's, which the launch script sets from the sweep's tracking."""
    if plan.wandb is None:
        return []
    flags = [
        ["--wandb-project", plan.wandb.project],
        ["--wandb-exp-name", plan.id],
        ["--wandb-save-dir", f"{plan.run.checkpoint.save_dir}/wandb"],
    ]
    return flags + ([["--wandb-entity", plan.wandb.entity]] if plan.wandb.entity else [])


def _model(plan: Plan) -> list[list[str]]:
    """The model: the target's decoder through megatron-core's GPT model (Llama's, with the features of its family).

    Every shape the base checkpoint fixes is given, none left for Megatron-LM to derive: it would pad the vocabulary
    from len(tokenizer) (core_v0.16.1 megatron/training/tokenizer/tokenizer.py, _vocab_size_with_padding), which for
    Qwen's released tokenizers (151,665 and 151,669 tokens) is not the checkpoint's 151,936 or 152,064 rows, and
    would take each head as hidden / heads wide and RoPE over the whole head (validate_args, --rotary-percent)."""
    model = plan.run.model
    args: list[list[str]] = [
        ["--num-layers", str(model.num_layers)],
        ["--hidden-size", str(model.hidden_size)],
        ["--ffn-hidden-size", str(model.ffn_hidden_size)],
        ["--num-attention-heads", str(model.num_attention_heads)],
        ["--group-query-attention"],
        ["--num-query-groups", str(model.num_query_groups)],
        ["--kv-channels", str(head_width(model))],
        ["--seq-length", str(model.seq_length)],
        ["--max-position-embeddings", str(model.seq_length)],
        ["--position-embedding-type", "rope"],
        # RoPE over each head's whole width, as the families the planner maps rotate it (partial_rotary_factor 1).
        ["--rotary-percent", "1.0"],
        ["--rotary-base", str(model.rotary_base)],
    ]
    if model.rope_scaling_factor is not None:
        args += [["--use-rope-scaling"], ["--rope-scaling-factor", _number(model.rope_scaling_factor)]]
    args += [
        ["--normalization", "RMSNorm"],
        ["--norm-epsilon", _number(model.norm_epsilon)],
        ["--swiglu"],
        ["--disable-bias-linear"],
        # After --disable-bias-linear, which would otherwise turn the QKV bias off with the others.
        ["--add-qkv-bias"] if model.add_qkv_bias else [],
        ["--qk-layernorm"] if model.qk_layernorm else [],
        # megatron-core's (left, right) window: the window_size - 1 tokens before each token.
        ["--window-size", f"{model.window_size - 1},0"] if model.window_size is not None else [],
        ["--attention-dropout", "0.0"],
        ["--hidden-dropout", "0.0"],
        ["--init-method-std", _number(model.init_method_std)],
        # The embedding's and output layer's rows as the base checkpoint stores them (config.json's vocab_size).
        ["--padded-vocab-size", str(model.vocab_size)],
    ]
    if model.untie_embeddings_and_output_weights:
        args.append(["--untie-embeddings-and-output-weights"])
    return args + _experts(plan)


def _experts(plan: Plan) -> list[list[str]]:
    """An MoE model's experts, routing and dispatch (core_configs' _experts, in Megatron-LM's flags)."""
    moe, par = plan.run.model.moe, plan.run.parallelism
    if moe is None:
        return []
    return [
        ["--num-experts", str(moe.num_experts)],
        ["--moe-router-topk", str(moe.router_topk)],
        ["--moe-ffn-hidden-size", str(moe.expert_ffn_hidden_size)],
        ["--moe-router-load-balancing-type", "aux_loss"],
        ["--moe-aux-loss-coeff", _number(moe.aux_loss_coeff)],
        ["--moe-token-dispatcher-type", "alltoall"],
        ["--moe-router-dtype", "fp32"],
        # TE's grouped GEMM runs all of a rank's experts in one kernel; without TE they run one by one.
        ["--moe-grouped-gemm"] if plan.cluster.transformer_engine else [],
        ["--expert-model-parallel-size", str(par.expert)],
        ["--expert-tensor-parallel-size", str(par.expert_tensor or par.tensor)],
    ]


def _optimization(plan: Plan) -> list[list[str]]:
    """AdamW, its LR schedule and the gradient clip."""
    opt = plan.run.optimization
    return [
        ["--train-iters", str(opt.train_iters)],
        ["--lr", _number(opt.lr)],
        ["--min-lr", _number(opt.min_lr)],
        ["--lr-decay-style", opt.decay_style],
        ["--lr-warmup-iters", str(opt.warmup_iters)],
        ["--lr-decay-iters", str(opt.train_iters)],
        ["--weight-decay", _number(opt.weight_decay)],
        ["--adam-beta1", _number(opt.adam_beta1)],
        ["--adam-beta2", _number(opt.adam_beta2)],
        ["--adam-eps", _number(opt.adam_eps)],
        ["--clip-grad", _number(opt.clip_grad)],
    ]


def _layout(plan: Plan) -> list[list[str]]:
    """The parallel layout and its recomputation."""
    model, par = plan.run.model, plan.run.parallelism
    args = [
        ["--tensor-model-parallel-size", str(par.tensor)],
        ["--pipeline-model-parallel-size", str(par.pipeline)],
    ]
    if par.first_stage_layers is not None:
        args.append(["--decoder-first-pipeline-num-layers", str(par.first_stage_layers)])
    if par.last_stage_layers is not None:
        args.append(["--decoder-last-pipeline-num-layers", str(par.last_stage_layers)])
    if par.virtual_pipeline is not None:
        per_chunk = model.num_layers // (par.pipeline * par.virtual_pipeline)
        # Megatron-LM overlaps the interleaved schedule's p2p by default (--overlap-p2p-comm is on).
        args.append(["--num-layers-per-virtual-pipeline-stage", str(per_chunk)])
    args.append(["--context-parallel-size", str(par.context)])
    if par.sequence_parallel:
        args.append(["--sequence-parallel"])
    if par.recompute == "selective":
        # The MLP, not Megatron-LM's default core_attn: flash attention stores no scores worth recomputing.
        args += [["--recompute-granularity", "selective"], ["--recompute-modules", recompute_module(model)]]
    elif par.recompute == "full":
        args += [
            ["--recompute-granularity", "full"],
            ["--recompute-method", "uniform"],
            ["--recompute-num-layers", "1"],
        ]
    return args


def _layer_implementation(plan: Plan) -> list[list[str]]:
    """Transformer Engine's layers with flash attention where the cluster's image has TE; else megatron-core's
    local layers, and off the fusions only TE (or Apex) provides: RoPE's, the weight-gradient GEMM's and the
    masked softmax's CUDA kernels. Megatron-LM's local layers then run megatron-core's unfused attention."""
    if plan.cluster.transformer_engine:
        return [["--transformer-impl", "transformer_engine"], ["--attention-backend", "flash"]]
    return [
        ["--transformer-impl", "local"],
        ["--no-rope-fusion"],
        ["--no-gradient-accumulation-fusion"],
        ["--no-masked-softmax-fusion"],
    ]


def args_text(plan: Plan) -> str:
    """pretrain_gpt_args.txt: one flag and its values per line."""
    return "".join(" ".join(shlex.quote(item) for item in group) + "\n" for group in megatron_args(plan))


def differing_flags(written: str, now: str) -> list[str]:
    """The flags whose values differ between two pretrain_gpt_args.txt texts, as `--flag old -> new` (a flag one of
    them lacks shows as absent): what a request would change in arguments a job may have been launched with."""
    old, new = (_flag_values(text) for text in (written, now))
    flags = list(old) + [flag for flag in new if flag not in old]
    changed = [flag for flag in flags if old.get(flag) != new.get(flag)]
    return [f"{flag} {old.get(flag, 'absent')} -> {new.get(flag, 'absent')}" for flag in changed]


def _flag_values(text: str) -> dict[str, str]:
    """Each line's flag and its values as written (one flag per line, as args_text writes them)."""
    lines = (line.split(" ", 1) for line in text.splitlines() if line.strip())
    return {parts[0]: parts[1] if len(parts) > 1 else "(set)" for parts in lines}


def launch_script(plan: Plan) -> str:
    """pretrain_gpt.sh: the same arguments under torchrun, one node's launch (run it on every node)."""
    cluster = plan.cluster
    lines = [
        "#!/usr/bin/env bash",
        f"# Plan {plan.id}: {plan.target.name} on {cluster.name} ({cluster.nodes} x {cluster.gpus_per_node} GPUs).",
        "# Run on every node with NODE_RANK, MASTER_ADDR and MASTER_PORT set, from a Megatron-LM checkout.",
        "set -euo pipefail",
        "# Megatron-LM requires it on Hopper with tensor or context parallelism (it orders TP communication and compute).",
        "export CUDA_DEVICE_MAX_CONNECTIONS=1",
        *_wandb_mode(plan),
        f"torchrun --nnodes {cluster.nodes} --nproc-per-node {cluster.gpus_per_node} \\",
        '  --node-rank "$NODE_RANK" --master-addr "$MASTER_ADDR" --master-port "${MASTER_PORT:-6000}" \\',
        f"  {PRETRAIN_SCRIPT} \\",
    ]
    groups = [" ".join(shlex.quote(item) for item in group) for group in megatron_args(plan)]
    # "$@" last: `pretrain_gpt.sh --skip-train` before the first launch evaluates the base on each validation set at
    # iteration 0 (the base losses domain_gain and forgetting are measured against) and exits without training.
    lines += [f"  {group} \\" for group in groups] + ['  "$@"']
    return "\n".join(lines) + "\n"


def _wandb_mode(plan: Plan) -> list[str]:
    """The sweep's W&B mode unless the shell sets WANDB_MODE (as for the trials, sweep/run/tracking.py); online
    without an API key in the environment, wandb itself refuses to start."""
    if plan.wandb is None:
        return []
    return [
        f"# W&B as the sweep's tracking says: project {plan.wandb.project}, mode {plan.wandb.mode}.",
        f'export WANDB_MODE="${{WANDB_MODE:-{plan.wandb.mode}}}"',
    ]


def _number(value: float) -> str:
    """Exact (repr round-trips), so the arguments agree with plan.json to the last bit."""
    return repr(float(value))
