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
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import torch

from train_entry.data.tokenizer import megatron_tokenizer
from train_entry.file_format import TRIAL_CONFIG, TRIAL_RESULT
from train_entry.group import Group
from train_entry.hf_dir import HfDirError
from train_entry.loop import Batches, LoopResult, Sharing, fit, sequence_losses
from train_entry.model import Runtime, load_causal_lm, ready_layers
from train_entry.trial_config import (
    RESULT_JSON,
    TRIAL_CONFIG_JSON,
    BaseLosses,
    CorpusPrefixes,
    Metrics,
    ProxyConfig,
    SequenceLosses,
    TextError,
    TrialConfig,
    TrialResult,
    TrialStatus,
    TrialUsage,
)
from train_entry.usage import UsageMeter

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
    trained = train(config, model, stream, valid, runtime, report=report, on_step=on_step)
    return write_result(config, trained, wall_seconds=time.perf_counter() - started)


def write_config(config: TrialConfig) -> Path:
    """Creates the output directory and writes the config the trial is a function of, before it trains."""
    output_dir = Path(config.output_dir)
    output_dir.mkdir(parents=True, exist_ok=True)
    (output_dir / TRIAL_CONFIG_JSON).write_text(TRIAL_CONFIG.dumps(config))
    return output_dir


def write_result(config: TrialConfig, trained: Trained, *, wall_seconds: float, write: bool = True) -> TrialResult:
    """The trial's result, written to result.json unless `write` is False (a sharded trial's other workers)."""
    outcome, final = trained.outcome, trained.sequence_losses
    result = TrialResult(
        status=outcome.status,
        reason=outcome.reason,
        steps=outcome.steps,
        tokens_seen=outcome.tokens_seen,
        wall_seconds=wall_seconds,
        history=trained.history,
        sequence_losses=final,
        text_error=TextError.of(config.base_losses, final) if final is not None else None,
        usage=trained.usage,
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


@dataclass
class Trained:
    """What training gives back: the loop's outcome, every evaluation's metrics, the last one's sequence losses."""

    outcome: LoopResult
    history: list[Metrics]
    sequence_losses: SequenceLosses | None = None
    usage: TrialUsage | None = None
    """Set when training ends."""


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
) -> Trained:
    """Trains at config.peak_lr, reporting the metrics of every evaluation; a report that returns True
    stops the training. Returns the loop's outcome, every evaluation's metrics (after `history`, those of
    a resumed run's earlier attempts) and the last evaluation's sequence losses. In a sharded trial every worker
    measures its share, rank 0 alone reports, and its answer stops every worker."""
    proxy = config.proxy
    sharing = sharing or Sharing()
    trained = Trained(LoopResult(TrialStatus.COMPLETED, 0, 0), history if history is not None else [])
    meter, first_step = UsageMeter(runtime.device), sharing.progress.steps_done

    def evaluate(step: int, tokens_seen: int, train_loss: float, lr: float) -> bool:
        final = measure(model, valid, runtime, batch_size=proxy.batch_size, group=sharing.group)
        trained.sequence_losses = final
        metrics = Metrics.measure(
            base=config.base_losses,
            domain_loss=statistics.fmean(final.domain),
            general_loss=statistics.fmean(final.general),
            step=step,
            tokens_seen=tokens_seen,
            train_loss=train_loss,
            lr=lr,
        )
        trained.history.append(metrics)
        stop = sharing.group.decide(lambda: bool(report(metrics)))
        if not stop and keep is not None:
            keep(trained.history)
        return stop

    trained.outcome = fit(
        model,
        batches,
        proxy,
        runtime,
        steps=proxy.steps,
        batch_size=proxy.batch_size,
        peak_lr=config.peak_lr,
        eval_interval=proxy.eval_interval,
        divergence_factor=proxy.divergence_factor,
        evaluate=meter.aside(evaluate),
        on_step=on_step,
        sharing=sharing,
    )
    outcome = trained.outcome
    trained.usage = meter.usage(steps=outcome.steps, tokens_seen=outcome.tokens_seen, first_step=first_step)
    return trained


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
) -> SequenceLosses:
    """Each domain and general validation sequence's loss under the model."""
    return SequenceLosses(
        domain=sequence_losses(model, *valid.domain, runtime, batch_size, group).tolist(),
        general=sequence_losses(model, *valid.general, runtime, batch_size, group).tolist(),
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
    """The base's own losses on one of the sweep's validation draws, sequence by sequence: what a trial measured on
    that draw is relative to."""
    runtime = Runtime.detect()
    sets = validation_sets(valid, non_english_share, proxy, megatron_tokenizer(tokenizer_dir), cache_dir)
    model = load_causal_lm(base_dir, runtime)
    losses = measure(model, sets, runtime, batch_size=proxy.batch_size)
    domain_loss, general_loss = statistics.fmean(losses.domain), statistics.fmean(losses.general)
    if not (math.isfinite(domain_loss) and math.isfinite(general_loss)):  # no gain or forgetting can be measured
        raise HfDirError(
            f"{base_dir}: its weights give a validation loss of {domain_loss} (domain) and {general_loss} (general); "
            "a base's losses are finite numbers: its weights are damaged or saved mid-divergence"
        )
    return BaseLosses(
        domain_loss=domain_loss,
        general_loss=general_loss,
        domain_sequences=losses.domain,
        general_sequences=losses.general,
    )
