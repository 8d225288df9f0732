"""The plan: the promoted point turned into the full run's FullRunConfig, its layout and its estimate.

make_plan() builds it from a finished sweep's run directory and a PromotionConfig; which point it
promotes is sweep/promote/point/point.py's choice. Plan.read() loads a written plan.json. The plan id is a hash of the
whole plan (plan_identity: everything plan.json holds but the id itself and the path the run directory was named by),
which is everything pretrain_gpt_args.txt, pretrain_gpt.sh, full_run.json and a submitted job's job.json are made
from: the same request always lands in the same runs/<name>/promotion/<id>/ directory, and a request that changes
any of them (another MFU, whose step time moves the checkpoint interval; another W&B project) lands in another.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from sweep.files.compat import PLAN
from sweep.files.config_file import one_line
from sweep.files.records import CorruptFile, read_model
from sweep.files.rundir import PlanDir, RunDir, Segment
from sweep.promote.errors import PromotionError
from sweep.promote.estimate.assumptions import Assumptions
from sweep.promote.estimate.clusters import Cluster, load_cluster
from sweep.promote.estimate.counts import model_flops_per_token
from sweep.promote.estimate.layout import RankedLayout, fastest_with_transformer_engine, search_layouts
from sweep.promote.plan.evidence import Carried, ProxyBase, carried, proxy_base
from sweep.promote.plan.plan_wandb import sweep_wandb
from sweep.promote.plan.prediction import predicted_trajectory
from sweep.promote.plan.sweep_data import with_sweep_prefixes
from sweep.promote.plan.validation import ValidationSet, validation_sets
from sweep.promote.point.point import PromotedPoint, read_promoted
from sweep.promote.request.config import DataPrefix, PromotionConfig
from sweep.run.tracking import WandbConfig
from sweep.target.full_run import full_run_schedule
from sweep.target.load import load_target
from sweep.target.target import Target
from train_entry.config import StrictConfig, shown
from train_entry.fullrun.watch import PredictedTrajectory
from train_entry.megatron.config import BlendSource, Checkpoint, Data, FullRunConfig, ModelShape, Optimization
from train_entry.megatron.core_configs import CoreConfigError, check_backend, core_configs
from train_entry.mix import MixRatio, blend_weights
from train_entry.optimizer import peak_lr
from train_entry.trial_config import TrialConfig

LAYOUTS_KEPT = 5
"""Ranked layouts stored in the plan: the chosen one and the next best, for review."""
PLACEHOLDER_ROOT = "/PLACEHOLDER"
"""Paths under it stand for inputs the request did not give; a dry run accepts them, a submission must not."""


class SweepOrigin(StrictConfig):
    """Where the plan's LR and blend come from."""

    run_dir: str
    name: str
    promoted: PromotedPoint
    non_english_share: float
    """Of the general side, as the promoted point's proxy trial ran it (0 without non-English data)."""
    proxy: ProxyBase
    """The base the promoted lr_fraction was measured on (sweep/promote/plan/evidence.py)."""
    carried: Carried
    """How that lr_fraction reached the target: a ladder's law, or unchanged from the proxy."""


class RunEstimate(StrictConfig):
    """The whole run under the chosen layout."""

    step_s: float
    train_iters: int
    days: float
    gpu_hours: float
    tokens_per_s_per_gpu: float
    effective_mfu: float
    """Model FLOPs over the predicted step time and the GPUs' peak: the MFU assumption less bubble and communication."""


class Plan(StrictConfig):
    id: Segment
    """<target>-<cluster>-<hash>: names the plan's folder, runs/<name>/promotion/<id>/ (Plan.read checks it does)."""
    sweep: SweepOrigin
    target: Target
    cluster: Cluster
    tokens: int
    global_batch_tokens: int
    assumptions: Assumptions
    run: FullRunConfig
    """What the megatron-core entry runs (train_entry/megatron)."""
    layouts: list[RankedLayout]
    """The chosen layout first (it is run.parallelism), then the next best."""
    layouts_considered: int
    """Layouts that satisfied Megatron's constraints; the ranked ones are those that also fit in memory."""
    with_transformer_engine: RankedLayout | None = None
    """On a cluster whose image has no Transformer Engine: the layout the search would choose with it
    (sequence and context parallelism allowed), for what going without costs; None otherwise."""
    estimate: RunEstimate
    placeholders: list[str]
    """Inputs the request left out, stood in for by paths under /PLACEHOLDER; a submission refuses them."""
    wandb: WandbConfig | None = None
    """The sweep's W&B project, entity and mode: the full run logs beside its trials (None: the sweep tracked
    nothing in W&B)."""
    prediction: PredictedTrajectory | None = None
    """Forgetting against the full run's tokens, with its upper bound, that the forgetting watch holds the run to
    (sweep/promote/plan/prediction.py); None: no interval to bound it by, so no credible prediction."""

    @property
    def chosen(self) -> RankedLayout:
        return self.layouts[0]

    @property
    def validation(self) -> list[ValidationSet]:
        """The held-out sets evaluated apart, in Megatron-LM's order (sweep/promote/plan/validation.py): the run's."""
        return self.run.data.valid

    @classmethod
    def read(cls, path: str | Path) -> Plan:
        """A plan from its plan.json, or from the directory holding it; CorruptFile when it is not one, or when its
        id is not its folder's name (an id read back never names a path: the folder it was found in does)."""
        path = Path(path)
        plan_json = PlanDir(path).plan_json if path.is_dir() else path
        plan = read_model(plan_json, cls, fmt=PLAN)
        if plan.id != plan_json.parent.name:
            raise CorruptFile(
                f"{plan_json}: id is {shown(plan.id)}, but the plan's folder is {shown(plan_json.parent.name)}: a "
                "plan lives in the folder its id names; promote the run again to write it whole"
            )
        return plan

    def require_real_inputs(self) -> None:
        """Raises PromotionError when any input is still a placeholder: what a submission checks first."""
        if self.placeholders:
            raise PromotionError(
                f"plan {self.id} still has placeholders for: {', '.join(self.placeholders)}; give them "
                "(--data-prefix, --valid-prefix, --tokenizer, --base-checkpoint, --save-dir or the --config file) and plan again"
            )


def plan_dir(run_dir: Path, plan_id: str) -> PlanDir:
    """The plan's directory under the run, proven to lie inside it."""
    run = RunDir(run_dir)
    plan = run.plan(plan_id)
    run.inside(plan.path)
    return plan


def make_plan(
    run_dir: str | Path, config: PromotionConfig, *, observed: bool = False, unconfirmed: bool = False
) -> Plan:
    """The full-run plan of the sweep in `run_dir` under `config`, validated by megatron-core's configs: of
    best.json's pick (refused unconfirmed unless `unconfirmed`), or of its best observed trial's point when
    `observed` (sweep/promote/point/point.py)."""
    run_dir = Path(run_dir)
    target = load_target(config.require_target(), max_lr=config.max_lr, pretrain_tokens=config.pretrain_tokens)
    if target.max_lr is None:
        raise PromotionError(
            f"target {target.name} has no max_lr, its base's own pretraining peak LR ({target.source or 'not given'}): "
            "give it with --max-lr (or max_lr: in --config)"
        )
    promoted, trial = read_promoted(run_dir, observed=observed, unconfirmed=unconfirmed, target=target, config=config)
    cluster = load_cluster(config.cluster, transformer_engine=config.transformer_engine)
    layout_query = {
        "global_batch_size": _global_batch_size(config, target.model),
        "request": config.layout,
        "assumptions": config.assumptions,
    }
    search = search_layouts(target.model, cluster, **layout_query)
    chosen = search.ranked[0]
    train_iters = config.full_run.steps()
    config = with_sweep_prefixes(config, RunDir(run_dir))  # the sweep's own Megatron prefixes, where it had them
    validation, missing = validation_sets(config.data.valid, trial.non_english_share, placeholder_root=PLACEHOLDER_ROOT)
    run, placeholders = _full_run(promoted, trial, target, cluster, chosen, train_iters, config, validation)
    origin = SweepOrigin(
        run_dir=str(run_dir),
        name=run_dir.resolve().name,
        promoted=promoted,
        non_english_share=trial.non_english_share,
        proxy=proxy_base(run_dir, trial),
        carried=carried(promoted, target),
    )
    plan = Plan(
        id="unhashed",  # a valid Segment until plan_id below hashes everything else (plan_identity leaves it out)
        sweep=origin,
        target=target,
        cluster=cluster,
        tokens=config.tokens,
        global_batch_tokens=config.global_batch_tokens,
        assumptions=config.assumptions,
        run=run,
        layouts=search.ranked[:LAYOUTS_KEPT],
        layouts_considered=search.considered,
        with_transformer_engine=fastest_with_transformer_engine(target.model, cluster, **layout_query),
        estimate=_estimate(target.model, cluster, chosen, train_iters, config.global_batch_tokens),
        placeholders=placeholders + missing,
        wandb=sweep_wandb(RunDir(run_dir)),
        prediction=predicted_trajectory(RunDir(run_dir), promoted, config.tokens),
    )
    return plan.model_copy(update={"id": plan_id(plan)})


def _global_batch_size(config: PromotionConfig, model: ModelShape) -> int:
    """The global batch in sequences; PromotionError when the tokens asked for are not whole sequences."""
    if config.global_batch_tokens % model.seq_length:
        raise PromotionError(
            f"global batch of {config.global_batch_tokens} tokens is not a whole number of "
            f"{model.seq_length}-token sequences (the target's sequence length)"
        )
    return config.global_batch_tokens // model.seq_length


def _full_run(
    promoted: PromotedPoint,
    trial: TrialConfig,
    target: Target,
    cluster: Cluster,
    chosen: RankedLayout,
    train_iters: int,
    config: PromotionConfig,
    validation: list[ValidationSet],
) -> tuple[FullRunConfig, list[str]]:
    """The run at the promoted point's LR and blend on the chosen layout, and the inputs it holds placeholders for;
    PromotionError when it fails the full-run config's or megatron-core's checks."""
    lr = _significant(peak_lr(promoted.lr_fraction, max_lr=target.max_lr))
    # The proxy's schedule, scaled: the same decay shape and floor the sweep measured, after the run's own warmup.
    schedule = full_run_schedule(config.full_run.warmup_steps(train_iters), trial.proxy)
    blend, placeholders = _blend(promoted.mix, trial.non_english_share, config)
    checkpoint, checkpoint_placeholders = _checkpoint(config, chosen.step.total_s)
    tokenizer = config.data.tokenizer or f"{PLACEHOLDER_ROOT}/tokenizer"
    placeholders += ([] if config.data.tokenizer else ["tokenizer"]) + checkpoint_placeholders
    try:
        run = FullRunConfig(
            model=target.model,
            parallelism=chosen.parallelism,
            optimization=Optimization(
                lr=lr,
                min_lr=_significant(lr * schedule.min_lr_ratio),
                warmup_iters=schedule.warmup_steps,
                train_iters=train_iters,
                decay_style=schedule.schedule,
            ),
            data=Data(
                blend=blend,
                tokenizer=tokenizer,
                split=config.data.split,
                valid=validation,
                non_english_share=trial.non_english_share,
            ),
            checkpoint=checkpoint,
            # A validation loss with every checkpoint: the curve to judge a resume or a rollback by.
            eval_interval=checkpoint.save_interval,
        )
        core_configs(run)
        # A setting only Transformer Engine's layers run (a sliding window) on an image without TE is refused here.
        check_backend(run, transformer_engine=cluster.transformer_engine)
        run.parallelism.data_parallel_size(cluster.gpus)
    except (CoreConfigError, ValueError) as error:
        failed = "the plan fails the full-run config's or megatron-core's checks"
        raise PromotionError(f"{failed}: {one_line(error)}") from error
    return run, placeholders


def plan_id(plan: Plan) -> str:
    """<target>-<cluster>-<hash8>: the hash covers the whole plan (plan_identity)."""
    digest = hashlib.sha256(json.dumps(plan_identity(plan), sort_keys=True).encode()).hexdigest()
    return f"{plan.target.name}-{plan.cluster.name}-{digest[:8]}"


def plan_identity(plan: Plan) -> dict[str, Any]:
    """What makes one plan another: everything it holds but its id and the path its run directory was named by
    (runs/lr_mix and ./runs/lr_mix are one sweep). That is every input of the Megatron-LM arguments, the launch
    script, the entry's FullRunConfig and a job's record (the run, the cluster, the W&B settings, the predicted
    trajectory the watch holds the job to), and the estimate and assumptions they were chosen by: a calibrated MFU,
    which moves the step time and so the checkpoint interval, is another plan."""
    identity = plan.model_dump(mode="json", exclude={"id"})
    identity["sweep"].pop("run_dir")
    return identity


def differences(old: Plan, new: Plan) -> list[str]:
    """Where two plans differ, as dotted paths into plan.json (run.checkpoint.save_interval, wandb.project): a plan
    written over another's id must not differ anywhere."""
    return _differing_paths(plan_identity(old), plan_identity(new), "")


def _differing_paths(old: Any, new: Any, path: str) -> list[str]:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = list(old) + [key for key in new if key not in old]
        return [found for key in keys for found in _differing_paths(old.get(key), new.get(key), f"{path}.{key}")]
    if isinstance(old, list) and isinstance(new, list) and len(old) == len(new):
        return [found for i, pair in enumerate(zip(old, new)) for found in _differing_paths(*pair, f"{path}[{i}]")]
    return [] if old == new else [path.lstrip(".")]


def _blend(mix: MixRatio, non_english_share: float, config: PromotionConfig) -> tuple[list[BlendSource], list[str]]:
    """Megatron blend weights: the proxy's side weights (train_entry.mix.blend_weights), each side's
    weight split over its prefixes by token count when all are known, equally otherwise."""
    sources: list[BlendSource] = []
    placeholders: list[str] = []
    for side, weight in blend_weights(mix, non_english_share).items():
        prefixes: list[DataPrefix] = getattr(config.data, side)
        if not prefixes:
            prefixes = [DataPrefix(prefix=f"{PLACEHOLDER_ROOT}/data/{side}_text_document")]
            placeholders.append(f"data prefix {side}")
        counts = [prefix.tokens for prefix in prefixes]
        shares = (
            [count / sum(counts) for count in counts]
            if all(count is not None for count in counts)
            else [1 / len(prefixes)] * len(prefixes)
        )
        sources.extend(
            BlendSource(weight=weight * share, prefix=prefix.prefix, name=side)
            for prefix, share in zip(prefixes, shares)
        )
    return sources, placeholders


def _checkpoint(config: PromotionConfig, step_s: float) -> tuple[Checkpoint, list[str]]:
    given = config.checkpoint
    placeholders = [
        label for label, value in (("base checkpoint", given.base_dir), ("save dir", given.save_dir)) if not value
    ]
    checkpoint = Checkpoint(
        save_dir=given.save_dir or f"{PLACEHOLDER_ROOT}/checkpoints",
        save_interval=max(1, int(given.interval_hours * 3600 / step_s)),
        base_dir=given.base_dir or f"{PLACEHOLDER_ROOT}/base-checkpoint",
    )
    return checkpoint, placeholders


def _estimate(
    model: ModelShape, cluster: Cluster, chosen: RankedLayout, train_iters: int, batch_tokens: int
) -> RunEstimate:
    step = chosen.step.total_s
    seconds = step * train_iters
    return RunEstimate(
        step_s=step,
        train_iters=train_iters,
        days=seconds / 86400,
        gpu_hours=seconds * cluster.gpus / 3600,
        tokens_per_s_per_gpu=batch_tokens / step / cluster.gpus,
        effective_mfu=model_flops_per_token(model)
        * batch_tokens
        / step
        / (cluster.gpus * cluster.peak_bf16_tflops * 1e12),
    )


def _significant(value: float) -> float:
    """Six significant digits for an LR: 1.5e-05, not 1.4999999999999999e-05, in plan.json and the flags."""
    return float(f"{value:.6g}")
