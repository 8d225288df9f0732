"""`sweep trial SPEC --lr-fraction F --mix G:D`: one proxy trial, with a progress bar and a metrics table."""

from __future__ import annotations

from pathlib import Path

from cli.args import lr_fraction, mix
from train_entry.mix import MixRatio


def add_parser(verbs) -> None:
    parser = verbs.add_parser("trial", help="run one proxy trial and print its metrics")
    parser.add_argument("spec", type=Path, help="sweep spec YAML")
    parser.add_argument("--lr-fraction", type=lr_fraction, required=True, help="peak LR / base max_lr, in (0, 1]")
    parser.add_argument("--mix", type=mix, required=True, help='general:domain ratio, e.g. "1:1" or "4:1"')
    parser.add_argument(
        "--output", type=Path, default=None, help="trial directory (default: runs/trials/lr<F>_mix<G>-<D>)"
    )
    parser.set_defaults(
        func=lambda args: run_one(args.spec, lr_fraction=args.lr_fraction, mix=args.mix, output_dir=args.output)
    )


def trial_name(lr_fraction: float, mix: MixRatio) -> str:
    return f"lr{lr_fraction:g}_mix{mix.general:g}-{mix.domain:g}"


def run_one(spec_path: Path, *, lr_fraction: float, mix: MixRatio, output_dir: Path | None) -> int:
    from reports.tables import print_corpora, print_trial
    from sweep.run.prepare import prepare
    from sweep.run.progress import step_progress
    from sweep.run.tracking import TrialRun, resolve_wandb, wandb_trial_config
    from sweep.spec.spec import load_spec
    from train_entry.proxy import run_trial
    from train_entry.trial_config import Metrics, TrialStatus

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
