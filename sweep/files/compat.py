"""The one place that knows the format version of every file cpt-sweep writes, and what happens to another version.

cpt-sweep is 0.x: each file in FILES below is written with its version (and the cpt-sweep that wrote it) first,
and read back only at that version. A file with no version, another version or a value that is not a version is
refused, exit code 2, with one line naming the file, the version found, who wrote it, the version this build reads
and what to do (train_entry/file_format.py is the mechanism); three readers fall back instead, as they do for any
unreadable file: `sweep report --wandb` saves a new view, `sweep run` builds the base the shipped one would have
been, and a sharded trial starts over rather than resume. Nothing converts the files of earlier development
versions. When a format changes, its version goes up here; a conversion of the old version, should one ever be
kept, is written in this module and nowhere else. docs/guarantees.md shows the table to users.

Exempt, each for its reason: what other tools own and version themselves (Optuna's storage and its schema, Ray
Tune's experiment state, W&B's files, Megatron-LM and torch checkpoints, a Hugging Face model directory);
what is written for people and never read back (report/, summary.md, pretrain_gpt_args.txt, pretrain_gpt.sh,
driver.log, which are views of a versioned file beside them); and caches under the cache directory (the
built-in base, tokenizers, indexed corpora, base losses), whose entries are keyed by their recipe's version,
so another version is a miss that is rebuilt, never misread.
"""

from __future__ import annotations

from train_entry.file_format import (
    CHECKPOINT_PROGRESS,
    FORMAT_KEY,
    FULL_RUN,
    JOB,
    JOB_RESULT,
    TRIAL_CONFIG,
    TRIAL_RESULT,
    WRITTEN_BY,
    FileFormat,
    FormatError,
)

RESUME = "run `sweep run SPEC --name RUN` with this cpt-sweep, which writes it again from the study"
NEW_RUN = "run the sweep again with this cpt-sweep into a new run directory, or read this one with the cpt-sweep that wrote it"

RUN_RECORD = FileFormat("run record", 1, RESUME)
BEST = FileFormat("sweep summary", 5, RESUME)
LADDER = FileFormat("ladder summary", 4, NEW_RUN)
LAW_FIT = FileFormat("law fit report", 4, "fit it again with this cpt-sweep: `sweep law fit`")
PLAN = FileFormat("promotion plan", 6, "make the plan again with this cpt-sweep: `sweep promote plan RUN --target ...`")
JOBS = FileFormat(
    "list of job records",
    1,
    "list its jobs with the cpt-sweep that wrote it (or `ray job list`) and move the file aside",
)
DASHBOARD = FileFormat("W&B view record", 1, "a new view is saved")
SHIPPED_BASE = FileFormat("shipped-base manifest", 1, "make it again with `sweep base SPEC --ship DIR`")
TRIALS_TABLE = FileFormat("trials table", 4, NEW_RUN)
SPEC = FileFormat(
    "spec",
    1,
    f"a spec you write needs no {FORMAT_KEY}; the copy a run keeps (RUN/spec.yaml) is of another cpt-sweep: "
    "run the sweep again with this one into a new run directory",
)
STUDY_PLAN = FileFormat("sweep plan", 3, NEW_RUN)
TRIAL_BASE = FileFormat("trial's base losses", 1, NEW_RUN)
WATCH = FileFormat("watch record", 1, "watch the job again with this cpt-sweep: `sweep promote watch RUN`")

FILES: dict[str, FileFormat] = {
    "run.json": RUN_RECORD,
    "best.json": BEST,
    "ladder.json": LADDER,
    "spec.yaml": SPEC,  # the run's copy of its spec
    "trials.parquet": TRIALS_TABLE,  # a format_version column
    "trials.csv": TRIALS_TABLE,
    "wandb_dashboard.json": DASHBOARD,
    "trials/<n>/trial_config.json": TRIAL_CONFIG,
    "trials/<n>/result.json": TRIAL_RESULT,
    "trials/<n>/checkpoint/<step>/progress.json": CHECKPOINT_PROGRESS,
    "promotion/<id>/plan.json": PLAN,
    "promotion/<id>/full_run.json": FULL_RUN,
    "promotion/<id>/jobs.json": JOBS,
    "promotion/<id>/jobs/<submission>/job.json": JOB,
    "promotion/<id>/jobs/<submission>/watch.json": WATCH,  # and a rehearsal's job's, and the plan's own for a --log
    "promotion/<id>/watch.json": WATCH,
    "<the job's storage>/<submission>/result.json": JOB_RESULT,
    "<the study's storage>: the user attr 'plan'": STUDY_PLAN,
    "<the study's storage>: each trial's user attr 'base_losses'": TRIAL_BASE,
    "data/tiny-llama/cpt_sweep_base.json": SHIPPED_BASE,
    "`sweep law fit --output FILE`": LAW_FIT,
}
"""Every file cpt-sweep writes and reads back, by its path in a run directory (or where else it lives)."""
EXEMPT = frozenset({"optuna.db", "driver.log", "driver.lock", "tune", "trials", "report", "promotion", "rungs"})
"""What a run directory holds besides FILES: another tool's store (Optuna's, Ray Tune's), a log, a lock, folders."""
PLAN_EXEMPT = frozenset({"summary.md", "pretrain_gpt_args.txt", "pretrain_gpt.sh", "rehearsal"})
"""A plan's views for people and tools that take no version (Megatron-LM's arguments, a shell script), and the
rehearsals' folder."""

__all__ = [
    "BEST",
    "CHECKPOINT_PROGRESS",
    "DASHBOARD",
    "EXEMPT",
    "FILES",
    "FORMAT_KEY",
    "FULL_RUN",
    "JOB",
    "JOBS",
    "JOB_RESULT",
    "LADDER",
    "LAW_FIT",
    "NEW_RUN",
    "PLAN",
    "PLAN_EXEMPT",
    "RESUME",
    "RUN_RECORD",
    "SHIPPED_BASE",
    "SPEC",
    "STUDY_PLAN",
    "TRIALS_TABLE",
    "TRIAL_CONFIG",
    "TRIAL_RESULT",
    "WATCH",
    "WRITTEN_BY",
    "FileFormat",
    "FormatError",
]
