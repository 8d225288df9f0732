"""A finished or running sweep's study, opened from its run directory for readers such as `sweep status`,
`sweep report` and promotion: the run record names the study and its storage."""

from __future__ import annotations

import functools
from collections.abc import Callable

from sweep.files.rundir import NotARunDirectory, RunDir, RunRecord
from sweep.files.storage_url import StorageError, shown_url, sqlite_file, stored_study_problem
from sweep.study.study import StudyNotFound, SweepStudy, load_study

StudyOpener = Callable[[], tuple[RunRecord, SweepStudy]]
"""open_run of one run, to call where its study is read: opened_once gives one that opens it on its first call."""


def open_run(run: RunDir) -> tuple[RunRecord, SweepStudy]:
    """A run's record and its study, for readers such as `sweep status` and `sweep report`.

    Never creates or changes anything: opening a missing SQLite file would make an empty one, and opening an empty
    one would write Optuna's schema into it, so a file that is no SQLite database is refused by its bytes first.
    """
    record = run.read_record()
    try:
        url = record.url(run)
    except StorageError as exc:
        raise NotARunDirectory(f"{run.run_json}: {exc}") from None
    database = sqlite_file(url)
    problem = None if database is None else stored_study_problem(database)
    if problem is not None:
        raise NotARunDirectory(f"{run.run_json}: no study: {problem}")
    try:
        return record, load_study(url=url, name=record.study_name)
    except StudyNotFound as exc:
        raise NotARunDirectory(
            f"{run.run_json} names study {record.study_name!r} in {shown_url(url)}, but {exc}"
        ) from None


def opened_once(run: RunDir) -> StudyOpener:
    """open_run(run) on the first call, and what it returned on the others: a reader that checks a file against the
    study in several places opens it once (an open costs ~40 ms here: Optuna reads its schema migrations to check the
    database's version). An open that fails raises at the first call, as open_run does."""
    return functools.cache(functools.partial(open_run, run))
