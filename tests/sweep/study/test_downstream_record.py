"""A trial's downstream scores through the study: stored on its Optuna trial, read back into its row, spread over
the trials table's columns, shown by the terminal's table and kept in W&B's final summary, each as recorded."""

from __future__ import annotations

import pandas as pd
import pytest
from rich.console import Console
from scripted import BASE, STEPS, scripted

from reports.tables import trials_table
from sweep.files.rundir import RunDir
from sweep.run.tracking import downstream_figures
from sweep.study.record import Attr
from sweep.study.table import trial_rows, write_tables
from sweep.study.trial import run_study_trial
from train_entry.downstream.scores import TaskDrop
from train_entry.trial_config import TrialUsage

GAINS = [0.1 + 0.02 * k for k in range(len(STEPS))]
DROP = TaskDrop(metric="acc", score=0.425, stderr=0.078, base_score=0.45, drop=0.025, drop_error=0.0125)


def scored_trial(report):
    result = scripted(GAINS, forgetting=0.01)(report)
    usage = TrialUsage(train_seconds=10.0, train_tokens=1000, downstream_seconds=2.5)
    return result.model_copy(update={"downstream": {"mc": DROP}, "usage": usage})


def test_a_trials_scores_go_to_its_row_the_table_the_terminal_and_wandb(open_sweep, tmp_path):
    sweep = open_sweep(sampler="random", pruner={"type": "none"})
    number = sweep.ask().number
    run_study_trial(sweep, number, scored_trial, base=BASE)
    unscored = sweep.ask().number
    run_study_trial(sweep, unscored, scripted(GAINS, forgetting=0.01), base=BASE)

    stored = sweep.frozen(number).user_attrs
    assert stored[Attr.DOWNSTREAM.value]["mc"]["drop"] == 0.025 and stored[Attr.DOWNSTREAM_SECONDS.value] == 2.5
    row, other = trial_rows(sweep)
    assert row.downstream == {"mc": DROP} and row.drop("mc") == 0.025 and row.downstream_seconds == 2.5
    assert other.downstream is None and other.drop("mc") is None

    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    write_tables([row, other], run)
    table = pd.read_csv(run.trials_csv)
    assert list(table.columns[-5:]) == ["mc_score", "mc_score_stderr", "mc_base_score", "mc_drop", "mc_drop_error"]
    assert table["mc_drop"].tolist()[0] == 0.025 and pd.isna(table["mc_drop"].tolist()[1])
    assert pd.read_parquet(run.trials_parquet)["mc_drop_error"].tolist()[0] == 0.0125

    console = Console(width=160, record=True)
    console.print(trials_table([row, other], downstream_budget={"mc": 0.05}))
    shown = console.export_text()
    assert "0.425 ± 0.078, drop +0.025 ± 0.013" in shown and "mc drop at most 0.05" in shown

    figures = downstream_figures(row)
    assert figures["mc_drop"] == 0.025 and figures["mc_score"] == 0.425 and figures["downstream_seconds"] == 2.5
    assert downstream_figures(other) == {}


def test_a_table_of_no_scored_trial_has_no_downstream_columns(open_sweep, tmp_path):
    sweep = open_sweep(sampler="random", pruner={"type": "none"})
    run_study_trial(sweep, sweep.ask().number, scripted(GAINS, forgetting=0.01), base=BASE)
    run = RunDir(tmp_path / "run")
    run.path.mkdir()
    write_tables(trial_rows(sweep), run)
    assert not [column for column in pd.read_csv(run.trials_csv).columns if column.endswith("_drop")]
    assert pytest.approx(0.01) == pd.read_csv(run.trials_csv)["forgetting"].iloc[0]
