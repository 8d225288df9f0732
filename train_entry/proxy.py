"""One proxy trial: continued pretraining of the base at one (lr_fraction, mix ratio).

`run_trial(config, report)` is a pure function of its config: it writes the resolved config to
its output directory, trains from the base with peak LR = lr_fraction x max_lr, and calls
`report(metrics)` at every evaluation with domain_loss, general_loss, domain_gain and forgetting
measured on the sweep's fixed validation sets. A report that returns True stops the trial (that
is how a sweep prunes); nothing here knows who decides. `run_sharded_trial` (train_entry.sharded.trial)
is the same trial over several workers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from train_entry.data.tokenizer import megatron_tokenizer
from train_entry.file_format import TRIAL_CONFIG, TRIAL_RESULT
from train_entry.group import Group
from train_entry.hf_dir import HfDirError
from train_entry.loop import Batches, LoopResult, Sharing, fit, mean_loss
from train_entry.model import Runtime, load_causal_lm, ready_layers
from train_entry.trial_config import (
    RESULT_JSON,
    TRIAL_CONFIG_JSON,
    BaseLosses,
    CorpusPrefixes,
    Metrics,
    ProxyConfig,
    TrialConfig,
    TrialResult,
)

if TYPE_CHECKING:
    from train_entry.data.blend import TokenStream, ValidationSets

Report = Callable[[Metrics], bool | None]
Keep = Callable[[list[Metrics]], None]
"""keep(history): called after each evaluation whose report let the trial go on (a sharded trial checkpoints)."""


def run_trial(
    config: TrialConfig, report: Report, *, on_step: Callable[[int, float], None] | None = None
) -> TrialResult:
    """Runs one proxy trial; `on_step(step, train_loss)` is for progress bars only."""
    started = time.perf_counter()
    output_dir = write_config(config)
    torch.set_num_threads(config.threads)
    runtime = Runtime.detect(compiled=config.compile)
    stream, valid = trial_data(config, cache_dir=output_dir / "megatron_index")
    torch.manual_seed(config.seed)
    model = load_causal_lm(config.base_dir, runtime)
    ready_layers(model, runtime, activation_checkpointing=config.activation_checkpointing)
    outcome, history = train(config, model, stream, valid, runtime, report=report, on_step=on_step)
    return write_result(config, outcome, history, wall_seconds=time.perf_counter() - started)


def write_config(config: TrialConfig) -> Path:
    """Creates the output directory and writes the config the trial is a function of, before it trains."""
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / TRIAL_CONFIG_JSON).write_text(TRIAL_CONFIG.dumps(config))
    return output_dir


def write_result(
    config: TrialConfig, outcome: LoopResult, history: list[Metrics], *, wall_seconds: float, write: bool = True
) -> TrialResult:
    """The trial's result, written to result.json unless `write` is False (a sharded trial's other workers)."""
    result = TrialResult(
        status=outcome.status,
        reason=outcome.reason,
        steps=outcome.steps,
        tokens_seen=outcome.tokens_seen,
        wall_seconds=wall_seconds,
        history=history,
    )
    if write:
        (Path(config.output_dir) / RESULT_JSON).write_text(TRIAL_RESULT.dumps(result))
    return result


def trial_data(config: TrialConfig, *, cache_dir: Path) -> tuple[TokenStream, ValidationSets]:
    """The trial's training stream (its mix and seed, proxy.steps x proxy.batch_size sequences) and the fixed
    validation sets (proxy.seed)."""
    # Imported here: the blend imports megatron-core (seconds), which the sweep's driver never needs when its data
    # and base losses are cached.
    from train_entry.data.blend import build_train_stream

    proxy = config.proxy
    tokenizer = megatron_tokenizer(config.tokenizer_dir)
    stream = build_train_stream(
        config.train,
        config.mix,
        config.non_english_share,
        num_samples=proxy.steps * proxy.batch_size,
        seq_len=proxy.seq_len,
        seed=config.seed,
        tokenizer=tokenizer,
        cache_dir=cache_dir,
    )
    return stream, validation_sets(config.valid, config.non_english_share, proxy, tokenizer, cache_dir)


def train(
    config: TrialConfig,
    model: torch.nn.Module,
    batches: Batches,
    valid: ValidationSets,
    runtime: Runtime,
    *,
    report: Report,
    on_step: Callable[[int, float], None] | None = None,
    sharing: Sharing | None = None,
    history: list[Metrics] | None = None,
    keep: Keep | None = None,
) -> tuple[LoopResult, list[Metrics]]:
    """Trains at config.peak_lr, reporting the metrics of every evaluation; a report that returns True
    stops the training. Returns the loop's outcome and every evaluation's metrics (after `history`, those of
    a resumed run's earlier attempts). In a sharded trial every worker measures its share, rank 0 alone
    reports, and its answer stops every worker."""
    proxy = config.proxy
    sharing = sharing or Sharing()
    history = history if history is not None else []

    def evaluate(step: int, tokens_seen: int, train_loss: float, lr: float) -> bool:
        domain_loss, general_loss = measure(model, valid, runtime, batch_size=proxy.batch_size, group=sharing.group)
        metrics = Metrics.measure(
            base=config.base_losses,
            domain_loss=domain_loss,
            general_loss=general_loss,
            step=step,
            tokens_seen=tokens_seen,
            train_loss=train_loss,
            lr=lr,
        )
        history.append(metrics)
        stop = sharing.group.decide(lambda: bool(report(metrics)))
        if not stop and keep is not None:
            keep(history)
        return stop

    outcome = fit(
        model,
        batches,
        proxy,
        runtime,
        steps=proxy.steps,
        batch_size=proxy.batch_size,
        peak_lr=config.peak_lr,
        eval_interval=proxy.eval_interval,
        divergence_factor=proxy.divergence_factor,
        evaluate=evaluate,
        on_step=on_step,
        sharing=sharing,
    )
    return outcome, history


def validation_sets(
    prefixes: CorpusPrefixes, non_english_share: float, proxy: ProxyConfig, tokenizer, cache_dir: Path
) -> ValidationSets:
    """The sweep's fixed domain and general validation sets: the same for every trial of a sweep."""
    from train_entry.data.blend import build_validation_sets

    return build_validation_sets(
        prefixes,
        non_english_share,
        num_sequences=proxy.eval_sequences,
        seq_len=proxy.seq_len,
        seed=proxy.seed,
        tokenizer=tokenizer,
        cache_dir=cache_dir,
    )


def measure(
    model: torch.nn.Module, valid: ValidationSets, runtime: Runtime, *, batch_size: int, group: Group | None = None
) -> tuple[float, float]:
    """(domain_loss, general_loss) of the model on the fixed validation sets."""
    return (
        mean_loss(model, *valid.domain, runtime, batch_size, group),
        mean_loss(model, *valid.general, runtime, batch_size, group),
    )


def measure_base(
    base_dir: Path,
    tokenizer_dir: Path,
    valid: CorpusPrefixes,
    non_english_share: float,
    proxy: ProxyConfig,
    *,
    cache_dir: Path,
) -> BaseLosses:
    """The base's own losses on the sweep's validation sets: what gain and forgetting are relative to."""
    runtime = Runtime.detect()
    sets = validation_sets(valid, non_english_share, proxy, megatron_tokenizer(tokenizer_dir), cache_dir)
    model = load_causal_lm(base_dir, runtime)
    domain_loss, general_loss = measure(model, sets, runtime, batch_size=proxy.batch_size)
    if not (math.isfinite(domain_loss) and math.isfinite(general_loss)):  # no gain or forgetting can be measured
        raise HfDirError(
            f"{base_dir}: its weights give a validation loss of {domain_loss} (domain) and {general_loss} (general); "
            "a base's losses are finite numbers: its weights are damaged or saved mid-divergence"
        )
    return BaseLosses(domain_loss=domain_loss, general_loss=general_loss)
