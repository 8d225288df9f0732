"""The one place that knows the format version of every file cpt-sweep writes, and what happens to another version.

cpt-sweep is 0.x: each file below is written with its version (and the cpt-sweep that wrote it) as its first
keys, and read back only at that version. A file with no version, another version or a value that is not a
version is refused, exit code 2, with one line naming the file, the version found, who wrote it, the version this
build reads and what to do (train_entry/file_format.py is the mechanism). Nothing converts the files of earlier
development versions. When a format changes, its version goes up here; a conversion of the old version, should
one ever be kept, is written in this module and nowhere else.

| file                                   | format          | read back by                                  |
|----------------------------------------|-----------------|-----------------------------------------------|
| run.json                               | RUN_RECORD      | every command given a run directory           |
| best.json                              | BEST            | promotion, reports, `sweep status`            |
| ladder.json                            | LADDER          | ladder runs, their report and promotion       |
| promotion/<id>/plan.json               | PLAN            | `sweep jobs`, submission, rehearsal           |
| promotion/<id>/full_run.json           | FULL_RUN        | `python -m train_entry.megatron --config`     |
| promotion/<id>/jobs.json               | JOBS            | `sweep jobs`, a second submission             |
| promotion/<id>/jobs/<id>/job.json      | JOB             | `python -m train_entry.fullrun.job`           |
| the job's result.json                  | JOB_RESULT      | rehearsal                                     |
| trials/<n>/trial_config.json           | TRIAL_CONFIG    | promotion (the promoted point's trial)        |
| trials/<n>/result.json                 | TRIAL_RESULT    | people and their scripts                      |
| trials/<n>/checkpoint/*/progress.json  | CHECKPOINT_PROGRESS | a resumed trial (another version: not resumed) |
| wandb_dashboard.json                   | DASHBOARD       | `sweep report --wandb` (another version: a new view) |
| data/tiny-llama/cpt_sweep_base.json    | SHIPPED_BASE    | `sweep run` (another version: the base is built) |
| trials.parquet, trials.csv             | TRIALS_TABLE    | people: a `format_version` column              |
| spec.yaml (the run's copy of its spec) | SPEC            | promotion: a `format_version` key              |
| the sweep plan stored in the study     | STUDY_PLAN      | every command that opens the study            |

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
BEST = FileFormat("sweep summary", 1, RESUME)
LADDER = FileFormat("ladder summary", 1, NEW_RUN)
PLAN = FileFormat("promotion plan", 1, "make the plan again with this cpt-sweep: `sweep promote RUN --target ...`")
JOBS = FileFormat(
    "list of job records",
    1,
    "list its jobs with the cpt-sweep that wrote it (or `ray job list`) and move the file aside",
)
DASHBOARD = FileFormat("W&B view record", 1, "a new view is saved")
SHIPPED_BASE = FileFormat("shipped-base manifest", 1, "make it again with `sweep base SPEC --ship DIR`")
TRIALS_TABLE = FileFormat("trials table", 1, NEW_RUN)
SPEC = FileFormat(
    "spec",
    1,
    f"a spec you write needs no {FORMAT_KEY}; the copy a run keeps (RUN/spec.yaml) is of another cpt-sweep: "
    "run the sweep again with this one into a new run directory",
)
STUDY_PLAN = FileFormat("sweep plan", 1, NEW_RUN)

__all__ = [
    "BEST",
    "CHECKPOINT_PROGRESS",
    "DASHBOARD",
    "FORMAT_KEY",
    "FULL_RUN",
    "JOB",
    "JOBS",
    "JOB_RESULT",
    "LADDER",
    "NEW_RUN",
    "PLAN",
    "RESUME",
    "RUN_RECORD",
    "SHIPPED_BASE",
    "SPEC",
    "STUDY_PLAN",
    "TRIALS_TABLE",
    "TRIAL_CONFIG",
    "TRIAL_RESULT",
    "WRITTEN_BY",
    "FileFormat",
    "FormatError",
]
