"""`sweep trial SPEC --lr-fraction F --mix G:D`: one proxy trial, with a progress bar and a metrics table.

It runs the one-process trial, also for a spec whose sweep shards each trial over several workers (which measure
what one process does): on CPU as it is, on GPUs when one GPU holds the trial.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.args import lr_fraction, mix
from train_entry.mix import MixRatio


def add_parser(verbs) -> None:
    parser = verbs.add_parser("trial", help="run one proxy trial and print its metrics")
    parser.add_argument("spec", type=Path, help="sweep spec YAML")
    parser.add_argument("--lr-fraction", type=lr_fraction, required=True, help="peak LR / base max_lr, in (0, 1]")
    parser.add_argument("--mix", type=mix, required=True, help='general:domain ratio, e.g. "1:1" or "4:1"')
    parser.add_argument(
        "--output",
        type=Path,
        default=None,
        help="a new (or empty) trial directory (default: runs/trials/lr<F>_mix<G>-<D>, written over by a rerun)",
    )
    parser.add_argument("--force", action="store_true", help="let --output write into a folder that holds files")
    parser.set_defaults(func=_run)


def _run(args: argparse.Namespace) -> int:
    if args.output is not None:  # before the spec is read: a refused output costs nothing
        from sweep.files.outputs import check_output

        check_output(args.output, inputs={args.spec: "the spec"}, force=args.force, folder=True)
    return run_one(args.spec, lr_fraction=args.lr_fraction, mix=args.mix, output_dir=args.output)


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
    _check_one_process(spec_path, spec)
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


def _check_one_process(spec_path: Path, spec) -> None:
    """SpecError with the figures when the spec's trials are sharded over GPUs and one GPU does not hold one."""
    from sweep.files.config_file import SpecError
    from sweep.spec.shapes import base_shape
    from sweep.spec.trial_scale import fits, on_gpus, trial_size

    execution = spec.execution
    if not execution.sharded:
        return
    print(f"note: `sweep trial` runs the trial in one process; `sweep run` runs it over {execution.trial_workers} "
          "workers, which measure the same")  # fmt: skip
    shape = base_shape(spec.base.model, spec.base.builtin, spec.proxy.seq_len)
    if not execution.gpus or shape is None:
        return
    one = on_gpus(execution, 1)
    if not fits(one, spec.proxy, shape):
        raise SpecError(
            f"{spec_path}: `sweep trial` runs one process on one GPU, and a trial of {spec.base.model} needs "
            f"{trial_size(one, spec.proxy, shape).line()}, over its {execution.gpu_memory_gb:g} GB; `sweep run` runs "
            f"its trials over execution.gpus = {execution.gpus:g}"
        )
