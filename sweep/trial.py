"""`sweep trial`: one proxy trial from the command line, with a progress bar and a metrics table."""

from __future__ import annotations

from pathlib import Path

from reports.tables import print_corpora, print_trial
from sweep.prepare import prepare
from sweep.progress import step_progress
from sweep.spec import load_spec
from sweep.tracking import TrialRun, resolve_wandb, wandb_trial_config
from train_entry.mix import MixRatio
from train_entry.proxy import run_trial
from train_entry.trial_config import Metrics, TrialStatus


def trial_name(lr_fraction: float, mix: MixRatio) -> str:
    return f"lr{lr_fraction:g}_mix{mix.general:g}-{mix.domain:g}"


def run_one(spec_path: Path, *, lr_fraction: float, mix: MixRatio, output_dir: Path | None) -> int:
    spec = load_spec(spec_path)
    prepared = prepare(spec)
    print_corpora(prepared.corpus_stats)
    name = trial_name(lr_fraction, mix)
    output_dir = output_dir or Path("runs") / "trials" / name
    config = prepared.trial_config(lr_fraction=lr_fraction, mix=mix, output_dir=output_dir)

    target, notice = resolve_wandb(spec.tracking.wandb)
    if notice:
        print(notice)
    tracked = TrialRun(
        target,
        name=name,
        group=None,
        config=wandb_trial_config(config, base_model=spec.base.model, sweep=None, number=None),
        directory=output_dir,
    )
    with tracked, step_progress(f"trial {name}", spec.proxy.steps) as on_step:
        tracked.start()

        def report(metrics: Metrics) -> bool:
            tracked.log(metrics)
            return False

        result = run_trial(config, report, on_step=on_step)
        tracked.end(status=result.status.name, reason=result.reason)
    print_trial(result, title=f"proxy trial {name}: peak LR {config.peak_lr:.3g}, domain_share {mix.domain_share:.2f}")
    return 0 if result.status is TrialStatus.COMPLETED else 1
