"""A finished sweep's run directory, written with the sweep's own types: best.json by sweep.best
and the optimum's resolved trial config, as sweep run leaves them. A module of its own (not
conftest) so that tests import it by a name no other test folder uses."""

from __future__ import annotations

from pathlib import Path

from sweep.best import BestSummary, Cost, Evidence, write_best
from sweep.record import Status
from sweep.rundir import RunDir
from sweep.table import TrialRow
from train_entry.mix import MixRatio
from train_entry.trial_config import BaseLosses, CorpusPrefixes, ProxyConfig, TrialConfig

MAX_LR = 3e-3
"""The default spec's built-in base max_lr: the proxy's, not the target's."""
PROXY = ProxyConfig(steps=200, seq_len=128, batch_size=8, warmup_steps=20, eval_interval=50, min_lr_ratio=0.1)


def write_run(
    run_dir: Path, *, lr_fraction: float = 0.1, mix: str = "1:1", non_english_share: float = 0.1, feasible: bool = True
) -> Path:
    """runs/<name>/ with best.json and trials/0007/trial_config.json; no optimum when not feasible."""
    ratio = MixRatio.parse(mix)
    row = TrialRow(
        number=7, status=Status.COMPLETED, reason=None, lr_fraction=lr_fraction, peak_lr=lr_fraction * MAX_LR,
        mix=mix, domain_share=ratio.domain_share, domain_gain=0.21, forgetting=0.015 if feasible else 0.08,
        domain_loss=3.1, general_loss=3.5, best_domain_gain=0.21, best_step=200, steps=200, stopped_step=None,
        tokens_seen=204800, wall_seconds=60.0, attempts=1,
    )  # fmt: skip
    run = RunDir(run_dir)
    run.trial(7).mkdir(parents=True, exist_ok=True)
    verdict = "optimum: trial 7" if feasible else "no completed trial is within the forgetting budget 0.0200"
    summary = BestSummary(
        verdict=verdict,
        optimum=row if feasible else None,
        least_forgetting=None if feasible else row,
        boundary_warnings=[],
        evidence=Evidence(forgetting_budget=0.02, trials={}, feasible_completed=int(feasible), runner_up=None),
        pareto_front=[row],
        cost=Cost(tokens_used=204800, tokens_saved_by_pruning=0, full_trial_tokens=204800),
    )
    write_best(summary, run)
    prefixes = CorpusPrefixes(general="/cache/general", domain="/cache/domain", non_english="/cache/non_english")
    config = TrialConfig(
        lr_fraction=lr_fraction, mix=ratio, base_dir="/cache/base", tokenizer_dir="/cache/tokenizer", max_lr=MAX_LR,
        base_losses=BaseLosses(domain_loss=3.9, general_loss=3.4), train=prefixes, valid=prefixes,
        non_english_share=non_english_share, proxy=PROXY, output_dir=str(run.trial(7)),
    )  # fmt: skip
    run.trial_config(7).write_text(config.model_dump_json(indent=2))
    return run_dir
