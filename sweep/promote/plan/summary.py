"""The plan for people: rich tables of the run, the chosen layout and the next best, and the estimate
with its assumptions; printed by `sweep promote` and written as summary.md beside plan.json."""

from __future__ import annotations

import io

from rich import box
from rich.console import Console, Group
from rich.table import Table

from sweep.choice.pick import PickSource
from sweep.law.validate import FoldErrors
from sweep.promote.estimate.layout import describe
from sweep.promote.estimate.memory import Memory
from sweep.promote.plan.plan import Plan
from sweep.promote.point.point import PromotedPoint
from sweep.scale import active_params, total_params
from train_entry.megatron.core_configs import transformer_engine_settings

SUMMARY_WIDTH = 120
"""Columns of summary.md's tables: fixed, so the file is the same on every terminal."""
NEAR_TIE = 0.02
"""Step times this close are not told apart by a model built on one MFU figure and nominal bandwidths."""


def summary_tables(plan: Plan) -> Group:
    return Group(_run_table(plan), _blend_table(plan), _layout_tables(plan), _estimate_table(plan))


def summary_markdown(plan: Plan) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=SUMMARY_WIDTH, color_system=None, force_terminal=False).print(summary_tables(plan))
    text = "\n".join(line.rstrip() for line in buffer.getvalue().splitlines())
    notes = "".join(f"- warning: {warning}\n" for warning in plan.sweep.promoted.warnings)
    notes += "".join(f"- placeholder: {name}\n" for name in plan.placeholders)
    return f"# Promotion plan {plan.id}\n\n```\n{text}\n```\n" + (f"\n{notes}" if notes else "")


def _run_table(plan: Plan) -> Table:
    run, promoted = plan.run, plan.sweep.promoted
    opt = run.optimization
    table = Table(title=f"Plan {plan.id}", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    rows = [
        ("sweep", f"{plan.sweep.name}: {_point(promoted)}"),
        ("proxy base", _proxy_text(plan)),
        ("lr_fraction", _carried_text(plan)),
        ("certainty", _certainty(plan)),
        *_ladder(promoted),
        ("chosen by", promoted.reason),
        ("target", _target_text(plan)),
        (
            "cluster",
            (
                f"{plan.cluster.name}: {plan.cluster.nodes} x {plan.cluster.gpus_per_node} GPUs, "
                f"{plan.cluster.gpu_memory_gb:g} GB, {plan.cluster.peak_bf16_tflops:g} TFLOP/s bf16"
            ),
        ),
        (
            "peak LR",
            f"{opt.lr:.4g} = lr_fraction {promoted.lr_fraction:.4g} x {plan.target.name}'s max_lr "
            f"{plan.target.max_lr:.4g}",
        ),
        ("schedule", f"{opt.warmup_iters} warmup iters, {opt.decay_style} to min LR {opt.min_lr:.4g}"),
        (
            "tokens",
            (
                f"{plan.tokens:,} in {opt.train_iters:,} iterations of {plan.global_batch_tokens:,} tokens "
                f"({run.parallelism.global_batch_size} x {run.model.seq_length})"
            ),
        ),
        ("mix", f"general:domain {promoted.mix}, non-English share {plan.sweep.non_english_share:g} of general"),
        (
            "checkpoints",
            (
                f"every {run.checkpoint.save_interval} iters to {run.checkpoint.save_dir}; "
                f"first launch starts from {run.checkpoint.base_dir}"
            ),
        ),
        ("tokenizer", run.data.tokenizer),
        (
            "watch",
            f"forgetting held to: {plan.prediction.source}"
            if plan.prediction is not None
            else "no credible prediction (no interval to bound forgetting by): measured and reported, never tripped",
        ),
    ]
    for key, value in rows:
        table.add_row(key, value)
    return table


def _target_text(plan: Plan) -> str:
    """The target's shape, the features by which it departs from Llama, and its parameters (total and, of an MoE
    model, active per token: what the FLOPs and so the step time count)."""
    model = plan.run.model
    moe = model.moe
    mlp = (
        f"{moe.num_experts} experts of FFN {moe.expert_ffn_hidden_size}, top {moe.router_topk}"
        if moe
        else f"FFN {model.ffn_hidden_size}"
    )
    text = (
        f"{plan.target.name}: {model.num_layers} layers, hidden {model.hidden_size}, {mlp}, "
        f"{model.num_attention_heads} heads / {model.num_query_groups} KV"
        + (f" of {model.kv_channels}" if model.kv_channels else "")
        + f", vocab {model.vocab_size}, seq {model.seq_length}"
    )
    features = [
        name
        for name, on in (
            ("QKV bias", model.add_qkv_bias),
            ("QK-norm", model.qk_layernorm),
            (f"sliding window {model.window_size}", model.window_size is not None),
            ("tied embeddings", not model.untie_embeddings_and_output_weights),
        )
        if on
    ]
    text += "".join(f", {feature}" for feature in features)
    text += f"; {total_params(model) / 1e9:.2f} B parameters"
    return text + (f", {active_params(model) / 1e9:.2f} B active per token" if moe else "")


def _point(point: PromotedPoint) -> str:
    """The promoted point's gain and forgetting: measured at a trial, or predicted by the surrogate."""
    if point.source is PickSource.LADDER:
        text = "the ladder's loss law at the target's size: predicted"
    elif point.source is PickSource.SURROGATE:
        where = f"at trial {point.trial}" if point.trial is not None else "between tried points"
        text = f"surrogate pick {where}: predicted"
    else:
        text = f"best observed trial {point.trial}: measured"
    return f"{text} domain_gain {point.domain_gain:.4f}, forgetting {point.forgetting:.4f}"


def _proxy_text(plan: Plan) -> str:
    """The base the lr_fraction was measured on: its model, size, tokenizer and own peak LR."""
    proxy = plan.sweep.proxy
    whose = "the largest rung's base " if plan.sweep.carried.by == "law" else ""
    return (
        f"{whose}{proxy.model}: {_size(proxy.parameters)}, tokenizer {proxy.tokenizer}, max_lr {proxy.max_lr:g} (its "
        "own pretraining peak LR, which lr_fraction was measured against)"
    )


def _size(parameters: int | None) -> str:
    return f"{parameters:,} non-embedding parameters" if parameters else "non-embedding parameters not read"


def _carried_text(plan: Plan) -> str:
    """How the fraction reached the target: the law's prediction there with its interval, or the proxy's own
    point applied unchanged, which the line says nothing validates at the target's size."""
    carried, lr_fraction = plan.sweep.carried, plan.sweep.promoted.lr_fraction
    target = f"{plan.target.name}'s {carried.target_parameters / 1e9:.2f} B non-embedding parameters"
    if carried.by == "law":
        interval = carried.lr_fraction_interval
        shown = "no interval (no refit gave one)"
        if interval is not None:
            shown = f"90 % interval [{interval[0]:.4g}, {interval[1]:.4g}]"
        return f"{lr_fraction:.4g}, carried to {target} by the ladder's loss law: {shown}"
    return (
        f"{lr_fraction:.4g}, unchanged from the proxy ({_size(plan.sweep.proxy.parameters)}): UNVALIDATED at "
        f"{target}, no law carried it there (a ladder of proxy sizes fits one: docs/ladder.md)"
    )


def _certainty(plan: Plan) -> str:
    """Whose the figures above are (the proxy's, or the law's at the target), their 90 % intervals and the chance of
    staying within the budget, when there are any."""
    point = plan.sweep.promoted
    if plan.sweep.carried.by == "law":
        owner = f"the law's at {plan.target.name}'s size, not a proxy's"
    else:
        owner = f"the proxy's ({_size(plan.sweep.proxy.parameters)}), not {plan.target.name}'s"
    if point.gain_interval is None or point.forgetting_interval is None:
        measured = f"one proxy trial's measurement (trial {point.trial})" if point.trial is not None else "predicted"
        return f"{owner}: domain_gain and forgetting above are {measured}, without an interval"
    (gain_low, gain_high), (forget_low, forget_high) = point.gain_interval, point.forgetting_interval
    text = (
        f"{owner}: 90 % intervals domain_gain [{gain_low:.4f}, {gain_high:.4f}], "
        f"forgetting [{forget_low:.4f}, {forget_high:.4f}]"
    )
    if point.probability_within_budget is not None:
        what = "share of refits within budget" if point.ladder is not None else "P(proxy re-run within budget)"
        text += f"; {what} {point.probability_within_budget:.2f}"
    return text


def _ladder(point: PromotedPoint) -> list[tuple[str, str]]:
    """The law's fit, the intervals of the point itself, its fold errors and its warnings, for a ladder's plan."""
    ladder = point.ladder
    if ladder is None:
        return []
    laws, prediction = ladder.laws, ladder.prediction
    law = laws.best.law
    fit = (
        f"over rungs {', '.join(laws.rungs)}: best form {law.form} (weight {laws.best.weight:.2f}), R2 "
        f"{law.general_quality.r2:.3f} (forgetting), {law.domain_quality.r2:.3f} (domain_gain)"
    )
    intervals = prediction.intervals
    if intervals is not None:
        lr, share = intervals.lr_fraction, intervals.domain_share
        fit += f"; 90 % intervals of the point: lr_fraction [{lr.low:.4g}, {lr.high:.4g}], domain share "
        fit += f"[{share.low:.3f}, {share.high:.3f}]"
    rows = [("law", fit)]
    if ladder.folds:
        rows.append(("folds", "; ".join(_fold_text(fold) for fold in ladder.folds)))
    return rows + [("WARNING", warning) for warning in ladder.warnings]


def _fold_text(fold: FoldErrors) -> str:
    """One rung predicted from the others, against its own: x lr_fraction, +- share and forgetting, gain short."""
    if fold.lr_ratio is None:
        return f"{fold.rung} no optimum to compare"
    text = f"{fold.rung} lr x{fold.lr_ratio:.2f}, share {fold.share_error:+.3f}"
    if fold.forgetting_error is not None:
        text += f", forgetting {fold.forgetting_error:+.4f}, gain short {fold.gain_shortfall:.4f}"
    return text + ("" if fold.covered else " (NOT covered)")


def _blend_table(plan: Plan) -> Table:
    table = Table(title="Blend (Megatron --data-path)")
    for column in ("corpus", "weight", "prefix"):
        table.add_column(column, justify="right" if column == "weight" else "left")
    for source in plan.run.data.blend:
        table.add_row(source.name or "", f"{source.weight:.4f}", source.prefix)
    return table


def _layout_tables(plan: Plan) -> Group:
    """The layouts shown, fastest first: what each is (PP "16 (7/7)": uneven, 7 layers on the first and last
    stages), then where its step time goes. Two tables, each whole in an 80-column terminal (one table of both
    folded every layout over four lines even at 120)."""
    ranks = ["chosen" if index == 0 else f"#{index + 1}" for index in range(len(plan.layouts))]
    # An MoE target's expert split (EP/ETP) and comm, and uneven first and last stages (in PP's cell), only where
    # they are; every column fits an 80-column terminal either way.
    moe = plan.run.model.moe is not None
    shapes = _compact_table(
        f"Layouts ({plan.layouts_considered} valid, {len(plan.layouts)} best that fit shown)",
        ("", "TP", "PP", "VPP", "CP", "DP", *(["EP/ETP"] if moe else []), "micro-batch", "recompute", "GB/GPU",
         "step s"),
    )  # fmt: skip
    for rank, layout in zip(ranks, plan.layouts):
        par = layout.parallelism
        vpp = str(par.virtual_pipeline) if par.virtual_pipeline else "-"
        uneven = par.first_stage_layers is not None or par.last_stage_layers is not None
        pipeline = (
            f"{par.pipeline} ({par.first_stage_layers or '-'}/{par.last_stage_layers or '-'})"
            if uneven
            else str(par.pipeline)
        )
        experts = [f"{par.expert}/{par.expert_tensor or par.tensor}"] if moe else []
        numbers = (str(par.tensor), pipeline, vpp, str(par.context), str(layout.data_parallel), *experts)
        costs = (f"{layout.memory.total_gb:.1f}", f"{layout.step.total_s:.2f}")
        shapes.add_row(rank, *numbers, str(par.micro_batch_size), par.recompute, *costs)
    parts = _compact_table(
        "Step time by cause, seconds (TP to EP: exposed communication)",
        ("", "compute", "last stage", "bubble", "TP", "CP", "DP", "PP", *(["EP"] if moe else [])),
    )
    for rank, layout in zip(ranks, plan.layouts):
        step = layout.step
        waits = (step.imbalance_s, step.bubble_s)
        comms = (step.tp_comm_s, step.cp_comm_s, step.dp_comm_s, step.pp_comm_s, *([step.ep_comm_s] if moe else []))
        parts.add_row(rank, *(f"{value:.2f}" for value in (step.compute_s, *waits, *comms)))
    return Group(shapes, parts)


def _compact_table(title: str, columns: tuple[str, ...]) -> Table:
    """A table of short cells, no vertical rules: first column left, the rest right, never wrapped."""
    table = Table(title=title, header_style="bold", box=box.SIMPLE_HEAD, collapse_padding=True, pad_edge=False)
    for index, column in enumerate(columns):
        table.add_column(column, justify="left" if index == 0 else "right", no_wrap=True)
    return table


def _estimate_table(plan: Plan) -> Table:
    estimate, memory = plan.estimate, plan.chosen.memory
    close = sum(layout.step.total_s <= estimate.step_s * (1 + NEAR_TIE) for layout in plan.layouts[1:])
    table = Table(title="Estimate (chosen layout)", show_header=False)
    table.add_column("", style="bold")
    table.add_column("")
    rows = [
        ("step time", f"{estimate.step_s:.2f} s"),
        ("wall clock", f"{estimate.days:.1f} days for {estimate.train_iters:,} iterations"),
        ("GPU-hours", f"{estimate.gpu_hours:,.0f}"),
        (
            "throughput",
            f"{estimate.tokens_per_s_per_gpu:,.0f} tokens/s/GPU, effective MFU {estimate.effective_mfu:.1%}",
        ),
        (
            "memory/GPU",
            (
                f"{memory.total_gb:.1f} GB on the {memory.stage} stage: weights {memory.weights_gb:.1f}, "
                f"grads {memory.gradients_gb:.1f}, optimizer {memory.optimizer_gb:.1f}, activations {memory.activations_gb:.1f}, "
                f"reserve {memory.reserve_gb:.1f}" + _experts_on_gpu(memory)
            ),
        ),
        ("compute rate", _compute_rate(plan)),
        *_transformer_engine_row(plan),
        (
            "not modelled",
            "data loading, checkpoint saves, failures and restarts, kernel efficiency varying with shard size",
        ),
        (
            "ranking",
            (
                f"{close} of the layouts shown are within {NEAR_TIE:.0%} of the chosen step time: equal within this "
                "model's precision; pin a familiar one with --tensor-parallel, --pipeline-parallel, --context-parallel"
            ),
        ),
    ]
    for key, value in rows:
        table.add_row(key, value)
    return table


def _experts_on_gpu(memory: Memory) -> str:
    """Of an MoE target: how much of what the GPU holds is experts (their optimizer states shard further)."""
    if not memory.expert_params_billion:
        return ""
    return f"; {memory.params_billion:.2f} B parameters, {memory.expert_params_billion:.2f} B of them experts"


def _compute_rate(plan: Plan) -> str:
    """The rate the layers' FLOPs are divided by, saying plainly whether it is assumed or measured."""
    assumptions, peak = plan.assumptions, plan.cluster.peak_bf16_tflops
    rate = f"{assumptions.mfu * peak:.0f} TFLOP/s per GPU = {assumptions.mfu:.1%} MFU of the {peak:g} TFLOP/s peak"
    if assumptions.calibration is None:
        return (
            f"ASSUMED, not measured: {rate}, a figure reached with Transformer Engine's layers "
            f"({assumptions.mfu_source}); `sweep promote ... --calibrate` on a GPU measures this target's layer instead"
            + _experts_rate(plan)
        )
    return f"MEASURED, not assumed: {rate}, {assumptions.mfu_source}"


def _experts_rate(plan: Plan) -> str:
    """Of an MoE target: the assumed rate was measured on dense layers, and experts run smaller GEMMs."""
    moe = plan.run.model.moe
    if moe is None:
        return ""
    return (
        f". This target's {moe.num_experts} experts of FFN {moe.expert_ffn_hidden_size} per layer run smaller GEMMs, "
        "plus routing and permutation, than the dense layers that rate was measured on: it overstates their speed "
        "(BENCHMARKS.md prices a published MoE run), so calibrate or give --mfu"
    )


def _transformer_engine_row(plan: Plan) -> list[tuple[str, str]]:
    """What the plan needs of the cluster's image: the settings only Transformer Engine's layers run, or,
    without TE, what leaving them out costs."""
    if not plan.cluster.transformer_engine:
        return [("without TE", _cost_without_transformer_engine(plan))]
    needed = transformer_engine_settings(plan.run)
    if not needed:
        return []
    text = (
        f"Transformer Engine in the cluster's image for {', '.join(needed)} (a node without it stops with that "
        "message before any GPU work); --no-transformer-engine plans for an image without it"
    )
    return [("needs TE", text)]


def _cost_without_transformer_engine(plan: Plan) -> str:
    """The image has no TE: sequence and context parallelism are out, and what the search would choose with them."""
    text = "the cluster's image has no Transformer Engine: layouts without sequence and context parallelism only"
    best = plan.with_transformer_engine
    if best is None:
        return f"{text}; no layout with them fits either"
    extra_s = plan.estimate.step_s - best.step.total_s
    if extra_s <= 0:
        return f"{text}, which costs nothing here: with TE the search chooses a layout as fast ({describe(best)})"
    iterations = plan.estimate.train_iters
    return (
        f"{text}. With TE the search would choose {describe(best)} at {best.step.total_s:.2f} s per step: "
        f"going without costs {extra_s:.2f} s per step (+{extra_s / best.step.total_s:.1%}), "
        f"{extra_s * iterations / 86400:.1f} days and {extra_s * iterations * plan.cluster.gpus / 3600:,.0f} GPU-hours"
    )
