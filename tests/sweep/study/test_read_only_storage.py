"""A reader of a run (`sweep status`, `sweep report`, `sweep promote plan`) never writes into the study's database: an
optuna.db that is empty, not SQLite, someone else's SQLite file or another Optuna version's is exit 2 naming it, its
bytes unchanged (issue 52: an empty one was refused only after Optuna had written its schema into it, 0 -> 114,688
bytes; another Optuna's schema was a traceback)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest
from optuna.storages import RDBStorage

from cli import main
from tests.hostile import tree
from tests.sweep.promote.promote_runs import write_run

READERS = {
    "status": ["status", "{run}"],
    "report": ["report", "{run}"],
    "promote plan": ["promote", "plan", "{run}", "--target", "llama3.1-8b"],
}


def foreign_sqlite(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (text TEXT)")
    connection.execute("INSERT INTO notes VALUES ('not a study')")
    connection.commit()
    connection.close()


def other_optunas(path: Path) -> None:
    """A study database as another Optuna version left it: its schema at a revision this Optuna's is not."""
    RDBStorage(f"sqlite:///{path}").engine.dispose()
    connection = sqlite3.connect(path)
    connection.execute("UPDATE alembic_version SET version_num = 'v3.0.0.d'")
    connection.commit()
    connection.close()


DATABASES = {
    "empty": (lambda path: path.write_bytes(b""), "is an empty file, not a SQLite database"),
    "not SQLite": (lambda path: path.write_bytes(b"a text file\n" * 10), "is not a SQLite database"),
    "someone else's SQLite": (foreign_sqlite, "cannot be read as an Optuna storage (OperationalError"),
    # Optuna's own advice (`optuna storage upgrade`) kept: a reader does not upgrade what it reads.
    "another Optuna's": (other_optunas, "Optuna storage (RuntimeError: The runtime optuna version"),
}


@pytest.mark.parametrize("database", DATABASES.values(), ids=list(DATABASES))
@pytest.mark.parametrize("argv", READERS.values(), ids=list(READERS))
def test_a_database_that_holds_no_study_is_refused_unchanged(argv, database, tmp_path, capsys):
    write, message = database
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    db = run_dir / "optuna.db"
    db.unlink()
    write(db)
    before, digest = tree(tmp_path), hashlib.sha256(db.read_bytes()).hexdigest()

    assert main([part.format(run=run_dir) for part in argv]) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert str(db) in line and message in line, line
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert tree(tmp_path) == before
