"""The full run's config: the contract between a promotion plan and the megatron-core training entry.

`sweep promote` writes a FullRunConfig (as JSON) and the entry (`python -m train_entry.megatron
--config full_run.json`, or train() inside a Ray Train worker) runs exactly it. Plain data: it
round-trips through JSON unchanged, carries nothing about Ray or the sweep, and every field
maps onto one megatron-core setting (see core_configs.py for the mapping).
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import Field, model_validator

from train_entry.config import StrictConfig
from train_entry.megatron.validation import ValidationSet, check_sides


class RunConfigError(ValueError):
    """A valid run config that does not fit the job it runs in (its world size, its tokenizer)."""


class MoE(StrictConfig):
    """Mixture-of-experts MLPs in every layer (Mixtral, Qwen3-MoE): a router sends each token to its top-k of
    num_experts SwiGLU experts, megatron-core's MoELayer with the all-to-all token dispatcher."""

    num_experts: int = Field(gt=1)
    """Experts of each layer (Megatron's --num-experts); expert parallelism must divide it."""
    router_topk: int = Field(gt=0)
    """Experts each token runs through; their outputs are summed, weighted by the softmax over the top-k
    logits (Mixtral's, and Qwen3-MoE's with norm_topk_prob; megatron-core's default routing)."""
    expert_ffn_hidden_size: int = Field(gt=0)
    """Width of one expert's gate and up projections (Megatron's --moe-ffn-hidden-size)."""
    aux_loss_coeff: float = Field(0.0, ge=0.0)
    """Weight of the router's load-balancing loss (the base's router_aux_loss_coef): continued pretraining keeps
    the base's balance pressure, so the experts stay as evenly loaded as the base trained them."""

    @model_validator(mode="after")
    def _topk_fits(self) -> MoE:
        if self.router_topk > self.num_experts:
            raise ValueError(f"router_topk may not exceed num_experts, got {self.router_topk=}, {self.num_experts=}")
        return self


class ModelShape(StrictConfig):
    """A Llama-style decoder (RMSNorm, SwiGLU MLP, RoPE, grouped-query attention, no linear biases) and the
    features by which Qwen, Mistral and mixture-of-experts families depart from it; every estimator reads
    these fields, so a family is one reading of its config.json into them (sweep/target/families/)."""

    num_layers: int = Field(gt=0)
    hidden_size: int = Field(gt=0)
    ffn_hidden_size: int = Field(gt=0)
    """Width of the dense SwiGLU MLP's gate and up projections (Megatron asks it of an MoE model too, whose
    layers use moe.expert_ffn_hidden_size instead)."""
    num_attention_heads: int = Field(gt=0)
    num_query_groups: int = Field(gt=0)
    """Key/value heads (grouped-query attention); equal to num_attention_heads for plain multi-head."""
    kv_channels: int | None = Field(None, gt=0)
    """Each attention head's width where it is not hidden_size / num_attention_heads (Qwen 3 0.6B and 4B: 128
    where that gives 64 and 80); Megatron's --kv-channels. None: hidden_size / num_attention_heads."""
    vocab_size: int = Field(gt=0)
    """Rows of the embedding and output layer as stored in the base checkpoint (padding included):
    the checkpoint's shapes must match the model's, and tensor parallelism must divide it."""
    seq_length: int = Field(gt=0)
    """Tokens per training sequence (the reference recipe: 8192)."""
    rotary_base: int = Field(500_000, gt=0)
    """RoPE theta; Llama 3's 500 000."""
    rope_scaling_factor: float | None = Field(8.0, gt=1.0)
    """Llama 3.1's long-context RoPE frequency scaling (factor 8); None for plain RoPE (Llama 2, Llama 3.0)."""
    norm_epsilon: float = Field(1e-5, gt=0.0)
    """RMSNorm epsilon; Llama's 1e-5."""
    untie_embeddings_and_output_weights: bool = True
    """Llama 3.1 8B and 70B keep separate input embedding and output weights."""
    init_method_std: float = Field(0.02, gt=0.0)
    """Std of the initial weights; only a run without a base checkpoint keeps them."""
    add_qkv_bias: bool = False
    """Biases on the query, key and value projections only (Qwen 2 and 2.5); Llama has none."""
    qk_layernorm: bool = False
    """RMSNorm over each head's queries and keys before RoPE (Qwen 3): one weight vector of the head width each."""
    window_size: int | None = Field(None, gt=0)
    """Sliding-window attention (Mistral 7B v0.1: 4096): each token attends to itself and the window_size - 1
    tokens before it, as transformers' Mistral masks it; None attends to the whole causal prefix."""
    moe: MoE | None = None
    """Mixture-of-experts MLPs in every layer; None for dense SwiGLU MLPs of ffn_hidden_size."""

    @model_validator(mode="after")
    def _heads_fit(self) -> ModelShape:
        if self.kv_channels is None and self.hidden_size % self.num_attention_heads:
            raise ValueError(
                f"hidden_size must be a multiple of num_attention_heads (or kv_channels given), "
                f"got {self.hidden_size=}, {self.num_attention_heads=}"
            )
        if self.num_attention_heads % self.num_query_groups:
            raise ValueError(
                f"num_attention_heads must be a multiple of num_query_groups, "
                f"got {self.num_attention_heads=}, {self.num_query_groups=}"
            )
        return self


def interleaving_fits(*, pipeline: int, virtual_pipeline: int | None, microbatches: int) -> bool:
    """Interleaved 1F1B runs micro-batches in whole groups of `pipeline` (megatron-core's
    microbatch_group_size_per_vp_stage defaults to it); the plain schedule takes any count."""
    return virtual_pipeline is None or microbatches % pipeline == 0


def ddp_bucket_size(data_parallel: int) -> int:
    """megatron-core's own bucket size for `data_parallel` ranks, max(40M, 1M x DP) parameters
    (DistributedDataParallel.__init__): at a large DP a bigger bucket keeps each rank's share of the
    reduce-scatter large enough to stay bandwidth-bound. A plan pins the value for its DP."""
    return max(40_000_000, 1_000_000 * data_parallel)


class Parallelism(StrictConfig):
    """How the model and the batch are split over the GPUs: world size = tensor x pipeline x context x data."""

    tensor: int = Field(1, ge=1)
    """Tensor-parallel size; keep it within a node's NVLink domain (at most 8 on H100 nodes)."""
    pipeline: int = Field(1, ge=1)
    virtual_pipeline: int | None = Field(None, ge=2)
    """Model chunks per pipeline stage (interleaved 1F1B, fewer bubbles); None for plain 1F1B."""
    context: int = Field(1, ge=1)
    """Context-parallel size: splits each sequence over GPUs for long sequences."""
    expert: int = Field(1, ge=1)
    """Expert-parallel size (an MoE model only): the experts are split over this many of each pipeline stage's
    tensor x context x data ranks, and tokens reach their experts by all-to-all."""
    expert_tensor: int | None = Field(None, ge=1)
    """Tensor-parallel size inside each expert; None: the tensor-parallel size, as megatron-core defaults.
    1 keeps narrow experts whole (Qwen3-MoE's 768-wide ones), so their GEMMs stay large."""
    first_stage_layers: int | None = Field(None, ge=1)
    """Layers of the first pipeline stage where it holds fewer than the others (it also holds the embedding and
    the most micro-batches in flight); None: an even split. Megatron's --decoder-first-pipeline-num-layers."""
    last_stage_layers: int | None = Field(None, ge=1)
    """Layers of the last pipeline stage where it holds fewer (it also runs the output layer and the loss);
    None: an even split. Megatron's --decoder-last-pipeline-num-layers."""
    data: int | None = Field(None, ge=1)
    """Data-parallel size; None derives it from the world size, a value is checked against it."""
    micro_batch_size: int = Field(1, ge=1)
    """Sequences per forward/backward on one data-parallel rank."""
    global_batch_size: int = Field(ge=1)
    """Sequences per optimizer step over all data-parallel ranks (the reference recipe: 1440)."""
    sequence_parallel: bool = False
    """Shard layer-norm and dropout activations over the tensor-parallel group; needs tensor > 1."""
    recompute: Literal["none", "selective", "full"] = "none"
    """Activation recomputation: selective recomputes each layer's MLP (megatron-core's "mlp" recompute module),
    full whole layers (uniform, one at a time). Selective leaves the attention core alone: flash attention
    (TE's, flash-attn's or SDPA's) never stores the s x s scores, so recomputing it would only cost time."""
    ddp_bucket_size: int = Field(ddp_bucket_size(1), gt=0)
    """Parameters per gradient bucket of megatron-core's DDP, fixed for the whole run. The distributed
    optimizer's checkpoint is laid out by bucket and a resume must find the same buckets, while
    megatron-core's default (ddp_bucket_size(DP)) changes with the data-parallel size above 40: pinned,
    a restart on fewer or more nodes loads. A plan sets megatron-core's value for its own DP."""

    @model_validator(mode="after")
    def _sizes_fit(self) -> Parallelism:
        if self.virtual_pipeline is not None and self.pipeline < 2:
            raise ValueError(f"virtual_pipeline needs pipeline >= 2, got {self.pipeline=}, {self.virtual_pipeline=}")
        if self.sequence_parallel and self.tensor < 2:
            raise ValueError(f"sequence_parallel needs tensor >= 2, got {self.tensor=}")
        uneven = self.first_stage_layers is not None or self.last_stage_layers is not None
        if uneven and (self.pipeline < 2 or self.virtual_pipeline is not None):
            # megatron-core takes uneven stages with interleaving too, but Megatron-LM only through
            # --num-virtual-stages-per-pipeline-rank, which the plan does not write.
            raise ValueError(
                f"first_stage_layers and last_stage_layers need pipeline >= 2 and no virtual_pipeline, got "
                f"{self.pipeline=}, {self.virtual_pipeline=}"
            )
        if self.data is not None:
            if self.global_batch_size % (self.micro_batch_size * self.data):
                raise ValueError(
                    f"global_batch_size must be a multiple of micro_batch_size x data, "
                    f"got {self.global_batch_size=}, {self.micro_batch_size=}, {self.data=}"
                )
            # With the data-parallel size pinned, the micro-batch grouping can be checked before any job.
            self.num_microbatches(self.data * self.model_parallel_size)
        return self

    def stage_layers(self, num_layers: int) -> list[int]:
        """Layers of each pipeline stage, first to last; ValueError when they do not split as megatron-core
        requires (the stages between first and last hold equal shares, none empty)."""
        first, last = self.first_stage_layers, self.last_stage_layers
        middle_stages = self.pipeline - (first is not None) - (last is not None)
        middle_layers = num_layers - (first or 0) - (last or 0)
        chunks = middle_stages * (self.virtual_pipeline or 1)
        if (
            middle_layers < middle_stages
            or (middle_stages == 0) != (middle_layers == 0)
            or (chunks and middle_layers % chunks)
        ):
            raise ValueError(
                f"num_layers={num_layers} does not split over pipeline={self.pipeline} stages"
                + (f" x virtual_pipeline={self.virtual_pipeline}" if self.virtual_pipeline else "")
                + f" with first_stage_layers={first}, last_stage_layers={last}: the other stages must hold "
                f"equal whole shares"
            )
        middle = [middle_layers // middle_stages] * middle_stages if middle_stages else []
        return ([first] if first is not None else []) + middle + ([last] if last is not None else [])

    @property
    def model_parallel_size(self) -> int:
        """GPUs that hold one replica of the model: tensor x pipeline x context."""
        return self.tensor * self.pipeline * self.context

    def data_parallel_size(self, world_size: int) -> int:
        """The data-parallel size on `world_size` GPUs; a RunConfigError when the layout does not fit them."""
        data, rest = divmod(world_size, self.model_parallel_size)
        if rest or data == 0:
            raise RunConfigError(
                f"world size {world_size} is not a multiple of tensor x pipeline x context = "
                f"{self.tensor} x {self.pipeline} x {self.context}"
            )
        if self.data is not None and self.data != data:
            raise RunConfigError(
                f"the plan's data-parallel size {self.data} needs {self.data * self.model_parallel_size} GPUs, "
                f"got world size {world_size}"
            )
        expert_group = self.expert * (self.expert_tensor or self.tensor)
        if (self.tensor * self.context * data) % expert_group:
            raise RunConfigError(
                f"expert x expert_tensor = {expert_group} must divide each pipeline stage's tensor x context x data "
                f"= {self.tensor} x {self.context} x {data} GPUs on world size {world_size}"
            )
        if self.global_batch_size % (self.micro_batch_size * data):
            raise RunConfigError(
                f"global_batch_size must be a multiple of micro_batch_size x data-parallel size, "
                f"got {self.global_batch_size=}, {self.micro_batch_size=}, data-parallel size {data}"
            )
        return data

    def num_microbatches(self, world_size: int) -> int:
        """Micro-batches per data-parallel rank and iteration on `world_size` GPUs.

        Interleaved 1F1B runs them in groups of `pipeline`, so with virtual_pipeline it must be a
        multiple of pipeline; a RunConfigError otherwise.
        """
        count = self.global_batch_size // (self.micro_batch_size * self.data_parallel_size(world_size))
        if not interleaving_fits(pipeline=self.pipeline, virtual_pipeline=self.virtual_pipeline, microbatches=count):
            raise RunConfigError(
                f"with virtual_pipeline the {count} micro-batches per iteration (global_batch_size / "
                f"(micro_batch_size x data-parallel size)) must be a multiple of pipeline={self.pipeline}"
            )
        return count


class Optimization(StrictConfig):
    """AdamW with linear warmup and decay to min_lr, in bf16 mixed precision."""

    lr: float = Field(gt=0.0)
    """Peak LR: the sweep's optimum lr_fraction x the base's max_lr."""
    min_lr: float = Field(ge=0.0)
    """LR floor at the end of the decay (~lr/10 per Chinchilla)."""
    warmup_iters: int = Field(ge=0)
    """Iterations of linear warmup from 0 to lr."""
    train_iters: int = Field(gt=0)
    """Optimizer steps of the whole run (the reference recipe: ~85 000); the decay ends here."""
    decay_style: Literal["cosine", "linear", "constant"] = "cosine"
    """LR decay after warmup; cosine as in the reference recipe."""
    weight_decay: float = Field(0.1, ge=0.0)
    """Decoupled weight decay on matrices (not on norms and biases); Llama's 0.1."""
    adam_beta1: float = Field(0.9, ge=0.0, lt=1.0)
    adam_beta2: float = Field(0.95, ge=0.0, lt=1.0)
    """Llama's 0.95: a shorter second-moment memory than Adam's default 0.999, steadier at scale."""
    adam_eps: float = Field(1e-8, gt=0.0)
    clip_grad: float = Field(1.0, gt=0.0)
    """Global gradient-norm clip; Llama's 1.0."""
    bf16: bool = True
    """bf16 weights and compute with fp32 main weights, gradients reduced in fp32; False trains in fp32."""

    @model_validator(mode="after")
    def _schedule_fits(self) -> Optimization:
        if self.min_lr > self.lr:
            raise ValueError(f"min_lr may not exceed lr, got {self.min_lr=}, {self.lr=}")
        if self.warmup_iters >= self.train_iters:
            raise ValueError(f"warmup_iters must be below train_iters, got {self.warmup_iters=}, {self.train_iters=}")
        return self


class BlendSource(StrictConfig):
    """One corpus of the training blend: a megatron-core indexed dataset and its sampling weight."""

    weight: float = Field(gt=0.0)
    """Sampling weight; the weights are normalised over the blend, as Megatron's --data-path does."""
    prefix: str
    """Path prefix of the .bin/.idx pair (what Megatron's --data-path takes)."""
    name: str | None = None
    """What the corpus is (general, non_english, domain), for logs."""


class Data(StrictConfig):
    """The training blend, built by megatron-core's BlendedMegatronDatasetBuilder with GPTDataset."""

    blend: list[BlendSource] = Field(min_length=1)
    """The corpora and their weights: the sweep's optimum mix turned into blend weights."""
    tokenizer: str
    """A local Hugging Face tokenizer directory (the base's own); nothing is downloaded at run time."""
    split: str = "99,1,0"
    """Train/valid/test split of every indexed dataset, in Megatron's "a,b,c" form, without validation sets; with
    them the training prefixes are read whole, as Megatron-LM's --train-data-path reads them."""
    valid: list[ValidationSet] = Field(default_factory=list, max_length=3)
    """The held-out sets evaluated apart (general, domain, and non-English with a non-English share), in Megatron-LM's
    --valid-data-path order; empty: no evaluation."""
    non_english_share: float = Field(0.0, ge=0.0, lt=1.0)
    """Of the general side, as the proxies blended their general validation set: weighs the non-English set's loss
    into the general loss domain_gain's partner, forgetting, is measured on."""
    seed: int = 1234
    """Seeds the blend's sample order."""
    cache_dir: str | None = None
    """Where megatron-core writes the blend's index files (on a file system every node sees); None: next to the data."""
    num_workers: int = Field(2, ge=0)
    """DataLoader worker processes per rank."""

    @model_validator(mode="after")
    def _split_parses(self) -> Data:
        check_split(self.split)
        if self.valid:
            check_sides([item.side for item in self.valid], self.non_english_share)
        return self


def check_split(split: str) -> str:
    """`split` when it is Megatron's "train,valid,test" of three non-negative numbers with train > 0; a promotion
    config checks its own with this too, so a bad one is named in that file."""
    parts = split.split(",")
    try:
        shares = [float(part) for part in parts]
    except ValueError:
        shares = []
    if len(parts) != 3 or any(not math.isfinite(s) or s < 0 for s in shares) or not shares or shares[0] <= 0:
        raise ValueError(f'split must be three non-negative numbers "train,valid,test" with train > 0, got {split!r}')
    return split


class Checkpoint(StrictConfig):
    """Where the run starts from and where it saves (megatron-core distributed checkpoints)."""

    save_dir: str
    """The run's own checkpoints, iter_NNNNNNN/ plus a tracker file naming the latest; a rerun resumes from it."""
    save_interval: int = Field(gt=0)
    """Iterations between saves (and one at the end): the most work a lost node costs."""
    base_dir: str | None = None
    """The base model in Megatron distributed-checkpoint format (e.g. converted from Hugging Face with
    Megatron-Bridge). Loaded as weights only, with a fresh optimizer and iteration 0, when save_dir
    holds no checkpoint yet. None starts from random weights (smoke tests only)."""


class FullRunConfig(StrictConfig):
    """Everything one full continued-pretraining run depends on; the entry is a function of it."""

    model: ModelShape
    parallelism: Parallelism
    optimization: Optimization
    data: Data
    checkpoint: Checkpoint
    log_interval: int = Field(10, gt=0)
    """Iterations between log lines (loss, LR, grad norm, throughput)."""
    eval_interval: int | None = Field(None, gt=0)
    """Iterations between evaluations of data.valid's sets (and one at iteration 0, the base's); None: none."""
    eval_iters: int = Field(10, gt=0)
    """Global batches of each validation set per evaluation: the same samples every time."""
    seed: int = 1234
    """Seeds weight initialisation and megatron-core's tensor-parallel RNG."""

    @model_validator(mode="after")
    def _layout_fits_model(self) -> FullRunConfig:
        model, par = self.model, self.parallelism
        if model.vocab_size % par.tensor:
            raise ValueError(
                f"model.vocab_size must be a multiple of parallelism.tensor, "
                f"got model.vocab_size={model.vocab_size}, parallelism.tensor={par.tensor}"
            )
        if par.context > 1 and model.seq_length % (2 * par.context):
            raise ValueError(
                f"context parallelism splits each sequence into 2 x context chunks: model.seq_length must be "
                f"a multiple of {2 * par.context}, "
                f"got model.seq_length={model.seq_length}, parallelism.context={par.context}"
            )
        try:
            par.stage_layers(model.num_layers)
        except ValueError as error:
            raise ValueError(f"model.num_layers and parallelism: {error}") from None
        if model.moe is None and (par.expert > 1 or par.expert_tensor not in (None, par.tensor)):
            raise ValueError(
                f"parallelism.expert and expert_tensor split experts and model.moe is None, "
                f"got parallelism.expert={par.expert}, parallelism.expert_tensor={par.expert_tensor}"
            )
        if model.moe is not None and model.moe.num_experts % par.expert:
            raise ValueError(
                f"parallelism.expert must divide model.moe.num_experts, "
                f"got parallelism.expert={par.expert}, model.moe.num_experts={model.moe.num_experts}"
            )
        if self.eval_interval is not None and not self.data.valid:
            raise ValueError("eval_interval needs validation sets to evaluate: data.valid is empty")
        return self
