"""The study as the one source of truth: outcomes, the trials table, best.json, grid and resume rules."""

import json
import math
import sqlite3

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState
from scripted import BASE, STEPS, scripted

from sweep.choice.best import best_summary, write_best
from sweep.choice.observed import select
from sweep.files.compat import FORMAT_KEY, TRIALS_TABLE
from sweep.files.rundir import RunDir
from sweep.study.record import Attr, Status
from sweep.study.row import TrialRow
from sweep.study.storage import StorageUnreadable
from sweep.study.study import PLAN_ATTR, StudyMismatch, StudyNotFound, load_study
from sweep.study.table import trial_rows, write_tables
from sweep.study.trial import record_failure, run_study_trial
from train_entry.trial_config import TrialResult, TrialStatus

GAINS = [0.1 + 0.02 * k for k in range(len(STEPS))]


def test_table_rows_agree_with_the_study_for_every_outcome(open_sweep, tmp_path):
    sweep = open_sweep(sampler="random", pruner={"type": "none"}, forgetting_guard={"margin": 0.05, "min_steps": 50})
    completed = run_study_trial(sweep, sweep.ask().number, scripted(GAINS, forgetting=0.01), base=BASE)
    guarded = run_study_trial(sweep, sweep.ask().number, scripted(GAINS, forgetting=0.3), base=BASE)
    diverged = run_study_trial(sweep, sweep.ask().number, scripted(GAINS, diverge_after=75), base=BASE)
    failed = sweep.ask().number
    with pytest.raises(RuntimeError):
        run_study_trial(sweep, failed, lambda report: (_ for _ in ()).throw(RuntimeError("out of memory")), base=BASE)
    record_failure(sweep, failed, "RuntimeError: out of memory")
    running = sweep.ask().number

    assert (completed, guarded, diverged) == (Status.COMPLETED, Status.PRUNED, Status.DIVERGED)
    rows = trial_rows(sweep)
    assert [row.status for row in rows] == [
        Status.COMPLETED,
        Status.PRUNED,
        Status.DIVERGED,
        Status.FAILED,
        Status.RUNNING,
    ]
    states = [t.state for t in sweep.trials()]
    assert states == [TrialState.COMPLETE, TrialState.PRUNED, TrialState.PRUNED, TrialState.FAIL, TrialState.RUNNING]
    done = rows[0]
    assert done.domain_gain == pytest.approx(GAINS[-1]) and done.forgetting == pytest.approx(0.01)
    assert done.steps == STEPS[-1] and done.stopped_step is None and done.attempts == 1
    assert done.peak_lr == pytest.approx(done.lr_fraction * 3e-3)
    assert rows[1].stopped_step == 50 and rows[1].reason.startswith("forgetting guard")
    # What the guard judged it by (the raw 0.3: no completed trial to forecast from) is the bound the surrogate uses.
    assert rows[1].forecast_forgetting == pytest.approx(0.3) and done.forecast_forgetting is None
    assert rows[3].reason == "RuntimeError: out of memory" and rows[4].number == running

    write_tables(rows, RunDir(tmp_path))
    table = pd.read_parquet(tmp_path / "trials.parquet")
    assert list(table["number"]) == [row.number for row in rows]
    assert list(table["status"]) == [row.status.value for row in rows]
    assert (tmp_path / "trials.csv").read_text().count("\n") == len(rows) + 1
    csv = pd.read_csv(tmp_path / "trials.csv")
    # a row's downstream scores are spread over columns of their own, one set per task (none here)
    assert list(csv.columns) == list(table.columns) == [FORMAT_KEY, *(f for f in TrialRow.model_fields if f != "downstream")]
    assert set(csv[FORMAT_KEY]) == set(table[FORMAT_KEY]) == {TRIALS_TABLE.version}
    # every figure with the text it was measured on (docs/guarantees.md promised a draw column the table lacked):
    # the ended trials' on the pool, the diverged one's on the interim windows, none for those with no figure
    assert list(csv["text"].fillna("")) == ["pool", "pool", "interim", "", ""]


def test_the_forgetting_constraint_is_stored_for_the_sampler(open_sweep):
    sweep = open_sweep(sampler="tpe")
    number = sweep.ask().number
    run_study_trial(sweep, number, scripted(GAINS, forgetting=0.05), base=BASE)
    assert sweep.frozen(number).constraints == {"forgetting": pytest.approx(0.05 - 0.02)}


def test_a_trial_that_diverges_before_its_first_evaluation_is_shown_to_the_sampler_as_infeasible(open_sweep):
    """Told FAIL, it would be invisible to every sampler; told PRUNED with no curve and an infinite forgetting
    constraint, TPE counts it and ranks it below every trial that measured anything."""
    sweep = open_sweep(sampler="tpe")
    number = sweep.ask().number
    reason = "loss 4.500 at step 3 exceeds 1.0001 x the first step's 4.448"
    result = TrialResult(
        status=TrialStatus.DIVERGED, reason=reason, steps=3, tokens_seen=768, wall_seconds=0.1, history=[]
    )
    assert run_study_trial(sweep, number, lambda report: result, base=BASE) is Status.DIVERGED
    frozen = sweep.frozen(number)
    assert frozen.state is TrialState.PRUNED and frozen.intermediate_values == {}
    assert frozen.constraints == {"forgetting": math.inf}
    (row,) = trial_rows(sweep)
    assert (row.status, row.reason, row.stopped_step, row.domain_gain) == (Status.DIVERGED, reason, 3, None)


def test_a_raising_trial_keeps_its_error_and_attempts_then_fails_with_that_reason(open_sweep):
    sweep = open_sweep(sampler="random")
    number = sweep.ask().number

    def broken(report):
        report_first = scripted(GAINS[:1])
        report_first(report)
        raise ValueError("bad shard")

    for _ in range(2):  # the first run and one retry
        with pytest.raises(ValueError):
            run_study_trial(sweep, number, broken, base=BASE)
    frozen = sweep.frozen(number)
    assert frozen.state is TrialState.RUNNING
    assert frozen.user_attrs[Attr.ATTEMPTS.value] == 2
    assert frozen.user_attrs[Attr.ERROR.value].startswith("ValueError: bad shard")
    assert list(frozen.intermediate_values) == [STEPS[0]]  # the retry did not duplicate its report
    record_failure(sweep, number, frozen.user_attrs[Attr.ERROR.value])
    assert sweep.frozen(number).state is TrialState.FAIL


def test_a_finished_trial_is_not_run_again(open_sweep):
    sweep = open_sweep(sampler="random")
    number = sweep.ask().number
    run_study_trial(sweep, number, scripted(GAINS), base=BASE)
    calls = []
    assert run_study_trial(sweep, number, lambda report: calls.append(1), base=BASE) is Status.COMPLETED
    assert calls == []


def test_grid_is_enqueued_once_and_asks_return_exactly_the_grid(open_sweep):
    grid = {"sampler": "grid", "lr_fraction": [0.05, 0.1, 0.2], "mix": ["4:1", "1:4"], "num_trials": 6}
    sweep = open_sweep(**grid)
    open_sweep(**grid)  # a rerun enqueues nothing new
    assert len(sweep.trials()) == 6 == sweep.plan.planned_trials
    waiting = trial_rows(sweep)  # the table shows the grid before any trial starts
    assert {row.status for row in waiting} == {Status.WAITING}
    assert {(row.lr_fraction, row.mix) for row in waiting} == {
        (lr, mix) for lr in (0.05, 0.1, 0.2) for mix in ("4:1", "1:4")
    }
    asked = {(t.params["lr_fraction"], t.params["mix"]) for t in (sweep.ask() for _ in range(6))}
    assert asked == {(lr, mix) for lr in (0.05, 0.1, 0.2) for mix in ("4:1", "1:4")}


def test_a_study_made_for_another_plan_is_not_resumed(open_sweep):
    open_sweep(num_trials=8)
    with pytest.raises(StudyMismatch, match="--fresh"):
        open_sweep(num_trials=9)


def test_best_json_has_optimum_front_and_tokens_saved_by_pruning(open_sweep, tmp_path):
    sweep = open_sweep(sampler="random", pruner={"type": "none"}, forgetting_guard={"margin": 0.0, "min_steps": 50})
    run_study_trial(sweep, sweep.ask().number, scripted(GAINS, forgetting=0.01), base=BASE)
    run_study_trial(sweep, sweep.ask().number, scripted(GAINS, forgetting=0.5), base=BASE)  # guarded at step 50
    rows = trial_rows(sweep)
    selection = select(rows, forgetting_budget=0.02, space=sweep.plan.space)
    write_best(best_summary(selection, rows, sweep.plan), RunDir(tmp_path))
    best = json.loads((tmp_path / "best.json").read_text())
    assert best["best_observed"]["number"] == 0
    assert [row["number"] for row in best["pareto_front"]] == [0]
    full = sweep.plan.full_trial_tokens
    assert best["cost"]["tokens_saved_by_pruning"] == full - 50 * 1024
    assert best["cost"]["tokens_used"] == STEPS[-1] * 1024 + 50 * 1024


STORED_0_1 = {
    "forgetting_budget": 0.02, "max_lr": 0.003,
    "proxy": {"steps": 200, "seq_len": 128, "batch_size": 8, "warmup_steps": 20, "schedule": "cosine",
              "min_lr_ratio": 0.1, "weight_decay": 0.1, "grad_clip": 1.0, "eval_interval": 50, "eval_sequences": 64,
              "divergence_factor": 3.0, "seed": 0},
    "search": {"method": "grid", "lr_fraction": [0.05, 0.08], "mix": ["8:1", "4:1"], "num_trials": 4,
               "concurrency": 2, "sampler": "tpe",
               "pruner": {"type": "none", "n_startup_trials": 4, "n_warmup_steps": 0, "interval_steps": 1,
                          "percentile": 50.0, "reduction_factor": 3, "infeasible_penalty": 10.0},
               "forgetting_guard": None, "seed": 0, "storage": None, "max_retries": 1},
}  # fmt: skip
"""A grid's plan as cpt-sweep 0.1 stored it: the space inside search, and every pruner's knobs in one bag."""


def test_a_plan_stored_by_0_1_is_refused_as_not_one_this_version_wrote(tmp_path):
    """0.1 kept the space inside search and no format version; no compatibility code reads it, and the message
    says so."""
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    study = optuna.create_study(study_name="old", storage=url)
    study.set_user_attr(PLAN_ATTR, STORED_0_1)
    with pytest.raises(StudyNotFound, match="the sweep plan stored with study 'old': no format_version"):
        load_study(url=url, name="old")


def test_a_rerun_of_a_changed_spec_names_each_key_that_changed_with_both_values(open_sweep):
    """It said "created by a different search, objective or proxy" and left the user to diff their spec."""
    open_sweep(num_trials=8, pruner={"type": "median"})
    with pytest.raises(StudyMismatch) as refused:
        open_sweep(num_trials=9, pruner={"type": "none"})
    message = str(refused.value)
    assert "search.num_trials: 8 then, 9 now" in message and "search.pruner.type: 'median' then, 'none' now" in message
    assert "--fresh" in message and "\n" not in message


def test_a_database_another_optuna_wrote_is_refused_before_this_optuna_adds_its_tables(open_sweep, tmp_path):
    """Optuna makes its missing tables before it checks the schema's version: a driver resuming a study of an older
    Optuna's schema would have added this version's tables, then been refused, leaving a database neither version's
    `optuna storage upgrade` expects."""
    open_sweep()
    database = tmp_path / "optuna.db"
    older = sqlite3.connect(database)
    older.execute("DROP TABLE trial_heartbeats")  # a table an older schema lacks
    older.execute("UPDATE alembic_version SET version_num = 'v2.4.0.a'")
    older.commit()
    older.close()

    with pytest.raises(StorageUnreadable, match="no longer compatible with the table schema"):
        open_sweep()

    check = sqlite3.connect(database)
    tables = {name for (name,) in check.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    (revision,) = check.execute("SELECT version_num FROM alembic_version").fetchone()
    check.close()
    assert "trial_heartbeats" not in tables and revision == "v2.4.0.a"
