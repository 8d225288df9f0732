"""One proxy trial: continued pretraining of the base at one (lr_fraction, mix ratio).

`run_trial(config, report)` is a pure function of its config: it writes the resolved config to
its output directory, trains from the base with peak LR = lr_fraction x max_lr, and calls
`report(metrics)` at every evaluation with domain_loss, general_loss, domain_gain and forgetting
measured on the interim windows of the validation pool. A report that returns True stops the trial (that
is how a sweep prunes); nothing here knows who decides. When it ends, completed or stopped, its final figures are
measured on its validation text, the whole pool (or a confirmation trial's draw), document by document, with their
text error (train_entry.text_losses). `run_sharded_trial` (train_entry.sharded.trial) is the same trial over several
workers.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import torch

from train_entry.data.draws import text_name
from train_entry.data.tokenizer import megatron_tokenizer
from train_entry.data.windows import SideText, ValidationText, read_text
from train_entry.downstream.harness import score as score_downstream
from train_entry.downstream.scores import DownstreamScores, TaskDrop, task_drops
from train_entry.downstream.tasks import DownstreamPlan
from train_entry.file_format import TRIAL_CONFIG, TRIAL_RESULT
from train_entry.group import Group
from train_entry.hf_dir import HfDirError
from train_entry.loop import Batches, LoopResult, Sharing, fit, sequence_losses
from train_entry.model import Runtime, load_causal_lm, ready_layers
from train_entry.text_losses import TextLosses
from train_entry.trial_config import (
    RESULT_JSON,
    TRIAL_CONFIG_JSON,
    BaseLosses,
    CorpusPrefixes,
    Figures,
    Metrics,
    ProxyConfig,
    TrialConfig,
    TrialResult,
    TrialStatus,
    TrialUsage,
)
from train_entry.usage import UsageMeter

if TYPE_CHECKING:
    from train_entry.data.blend import TokenStream

Report = Callable[[Metrics], bool | None]
Keep = Callable[[list[Metrics], list[TextLosses]], None]
"""keep(history, documents): called after each evaluation whose report let the trial go on (a sharded trial
checkpoints)."""


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
    outcome = trained.outcome
    result = TrialResult(
        status=outcome.status,
        reason=outcome.reason,
        steps=outcome.steps,
        tokens_seen=outcome.tokens_seen,
        wall_seconds=wall_seconds,
        history=trained.history,
        documents=trained.documents,
        figures=trained.figures,
        usage=trained.usage,
        downstream=trained.downstream,
    )
    if write:
        (Path(config.output_dir) / RESULT_JSON).write_text(TRIAL_RESULT.dumps(result))
    return result


def trial_data(config: TrialConfig, *, cache_dir: Path) -> tuple[TokenStream, Texts]:
    """The trial's training stream (its mix and seed, proxy.steps x proxy.batch_size sequences) and its validation
    texts: the pool's interim windows and its final text."""
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
    return stream, trial_texts(config)


@dataclass(frozen=True)
class Texts:
    """What a trial is measured on: the interim windows every evaluation scores, and its final text."""

    interim: ValidationText
    final: ValidationText


def trial_texts(config: TrialConfig) -> Texts:
    """The pool's interim windows (proxy.eval_sequences per side) and the trial's final text: the pool, or its draw."""
    proxy, share = config.proxy, config.non_english_share
    pool = read_text(config.valid, share, seq_len=proxy.seq_len)
    final = pool if config.draw_valid is None else read_text(config.draw_valid, share, seq_len=proxy.seq_len)
    return Texts(interim=pool.interim(proxy.eval_sequences), final=final)


@dataclass
class Trained:
    """What training gives back: the loop's outcome, every evaluation's metrics and document losses, and the final
    figures on the trial's text."""

    outcome: LoopResult
    history: list[Metrics]
    documents: list[TextLosses]
    figures: Figures | None = None
    usage: TrialUsage | None = None
    """Set when training ends."""
    downstream: dict[str, TaskDrop] | None = None
    """Set when a completed trial's model has been scored on its downstream tasks."""


def train(
    config: TrialConfig,
    model: torch.nn.Module,
    batches: Batches,
    texts: Texts,
    runtime: Runtime,
    *,
    report: Report,
    on_step: Callable[[int, float], None] | None = None,
    sharing: Sharing | None = None,
    history: tuple[list[Metrics], list[TextLosses]] | None = None,
    keep: Keep | None = None,
) -> Trained:
    """Trains at config.peak_lr, reporting the metrics of every interim evaluation; a report that returns True
    stops the training. Returns the loop's outcome, every evaluation's metrics and document losses (after `history`,
    those of a resumed run's earlier attempts) and, unless it diverged, the final figures on the trial's text. In a
    sharded trial every worker measures its share, rank 0 alone reports, and its answer stops every worker."""
    proxy = config.proxy
    sharing = sharing or Sharing()
    earlier, documents = history if history is not None else ([], [])
    trained = Trained(LoopResult(TrialStatus.COMPLETED, 0, 0), list(earlier), list(documents))
    meter, first_step = UsageMeter(runtime.device), sharing.progress.steps_done

    def evaluate(step: int, tokens_seen: int, train_loss: float, lr: float) -> bool:
        losses = measure(model, texts.interim, runtime, batch_size=proxy.batch_size, group=sharing.group)
        metrics = Metrics.measure(
            base=config.base_losses,
            domain_loss=losses.domain.loss,
            general_loss=losses.general.loss,
            step=step,
            tokens_seen=tokens_seen,
            train_loss=train_loss,
            lr=lr,
        )
        trained.history.append(metrics)
        trained.documents.append(losses)
        stop = sharing.group.decide(lambda: bool(report(metrics)))
        if not stop and keep is not None:
            keep(trained.history, trained.documents)
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
    if outcome.status is not TrialStatus.DIVERGED and outcome.steps > 0:
        trained.figures = meter.aside(final_figures)(config, model, texts.final, runtime, outcome.steps, sharing.group)
    trained.usage = meter.usage(steps=outcome.steps, tokens_seen=outcome.tokens_seen, first_step=first_step)
    return _score_downstream(config, model, runtime, trained)


def _score_downstream(config: TrialConfig, model: torch.nn.Module, runtime: Runtime, trained: Trained) -> Trained:
    """A completed trial's scores on its downstream tasks against the base's, and the seconds they took (none for a
    stopped or diverged trial, or without evaluation.downstream)."""
    if trained.outcome.status is not TrialStatus.COMPLETED or config.downstream is None:
        return trained
    scores = score_downstream(model, config.tokenizer_dir, config.downstream, device=str(runtime.device))
    trained.downstream = task_drops(config.downstream_base, scores)
    trained.usage = trained.usage.model_copy(update={"downstream_seconds": scores.seconds})
    return trained


def score_base(base_dir: Path, tokenizer_dir: str, plan: DownstreamPlan) -> DownstreamScores:
    """The base's own downstream scores, the reference every trial's drop is measured against."""
    runtime = Runtime.detect()
    return score_downstream(load_causal_lm(base_dir, runtime), tokenizer_dir, plan, device=str(runtime.device))


def final_figures(
    config: TrialConfig, model: torch.nn.Module, text: ValidationText, runtime: Runtime, step: int, group: Group
) -> Figures:
    """The trial's figures on its whole validation text at `step`, against the base's there."""
    losses = measure(model, text, runtime, batch_size=config.proxy.batch_size, group=group)
    return Figures.measure(text=text_name(config.valid_draw), step=step, base=config.final_base_losses, losses=losses)


def measure(
    model: torch.nn.Module, text: ValidationText, runtime: Runtime, *, batch_size: int, group: Group | None = None
) -> TextLosses:
    """Each document's mean token loss under the model, both sides of the text."""
    return text.losses(
        domain_sums=_window_sums(model, text.domain, runtime, batch_size, group),
        general_sums=_window_sums(model, text.general, runtime, batch_size, group),
    )


def _window_sums(
    model: torch.nn.Module, side: SideText, runtime: Runtime, batch_size: int, group: Group | None
) -> np.ndarray:
    """Each window's summed token loss: its mean over all seq_len positions times seq_len, as a padded position
    scores 0 (train_entry.data.windows.IGNORE)."""
    seq_len = side.tokens.shape[1]
    return sequence_losses(model, side.tokens, side.labels, runtime, batch_size, group).numpy() * seq_len


def measure_base(
    base_dir: Path, valid: CorpusPrefixes, non_english_share: float, proxy: ProxyConfig, *, interim: bool = False
) -> BaseLosses:
    """The base's own losses on one of the sweep's validation texts (with `interim`, on the pool's interim windows),
    document by document: what a trial measured on that text is relative to."""
    runtime = Runtime.detect()
    text = read_text(valid, non_english_share, seq_len=proxy.seq_len)
    model = load_causal_lm(base_dir, runtime)
    losses = measure(
        model, text.interim(proxy.eval_sequences) if interim else text, runtime, batch_size=proxy.batch_size
    )
    domain_loss, general_loss = losses.domain.loss, losses.general.loss
    if not (math.isfinite(domain_loss) and math.isfinite(general_loss)):  # no gain or forgetting can be measured
        raise HfDirError(
            f"{base_dir}: its weights give a validation loss of {domain_loss} (domain) and {general_loss} (general); "
            "a base's losses are finite numbers: its weights are damaged or saved mid-divergence"
        )
    return BaseLosses(domain_loss=domain_loss, general_loss=general_loss, documents=losses)
