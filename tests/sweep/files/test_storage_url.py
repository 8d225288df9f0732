"""Storage URLs: a password only as `${NAME}`, read from the environment, never written or printed;
read-only commands never create the database a run record points at."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from cli import main
from sweep.files.compat import RUN_RECORD
from sweep.files.rundir import RunDir, RunRecord
from sweep.files.storage_url import StorageError, check_url, resolve, shown_url
from sweep.spec.spec import load_spec
from sweep.study.storage import open_storage

SECRET = "s3cret-5b1e"


def test_a_storage_password_is_read_from_the_environment_and_stays_out_of_the_run_directory(
    write_tiny_spec, tmp_path: Path, monkeypatch
):
    reference = "postgresql://optuna:${CPT_TEST_DB_PASSWORD}@127.0.0.1:5432/optuna"
    spec = load_spec(write_tiny_spec("pg.yaml", execution={"storage": reference}))
    monkeypatch.setenv("CPT_TEST_DB_PASSWORD", SECRET)
    run = RunDir(tmp_path)
    record = RunRecord(study_name="pg", storage=spec.execution.storage)
    assert record.url(run) == f"postgresql://optuna:{SECRET}@127.0.0.1:5432/optuna"

    run.write_spec_copy(spec)
    run.write_record(record)
    assert run.read_record().storage == reference
    for path in tmp_path.iterdir():
        assert SECRET not in path.read_text(), path


def test_an_unset_storage_variable_stops_the_run_before_anything_is_written(write_tiny_spec, tmp_path, monkeypatch):
    spec = write_tiny_spec("unset.yaml", execution={"storage": "postgresql://u:${CPT_TEST_UNSET}@127.0.0.1/optuna"})
    monkeypatch.delenv("CPT_TEST_UNSET", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(StorageError, match=r"refers to CPT_TEST_UNSET, which is not set"):
        resolve(load_spec(spec).execution.storage)
    assert main(["run", str(spec)]) == 2
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://optuna:literal@db/optuna", "literal password"),
        ("postgresql://optuna@db/optuna?password=literal", "literal password"),
        ("postgresql://optuna@db/optuna?sslmode=require&PWD=literal", "literal password"),
        ("sqlite:///${CPT_TEST_SECRET}.db", "only as a password"),
        ("postgresql://optuna:${A}@${HOST}/optuna", "only as a password"),
        ("postgresql://optuna:${A}@db/${DB}", "only as a password"),
        ("not a url", "not a SQLAlchemy database URL"),
        ("postgresql://optuna:${A}@db:!1/optuna", "not a SQLAlchemy database URL"),  # SQLAlchemy's bare ValueError
        ("sqlite:////nonexistent-cpt/deeper/optuna.db", "does not exist"),
    ],
)
def test_a_storage_url_that_would_leak_or_fail_is_refused(url, message):
    with pytest.raises(StorageError, match=message):
        check_url(url)


def test_query_string_passwords_are_references_filled_in_and_masked(monkeypatch):
    url = "postgresql://optuna@db/optuna?sslmode=require&password=${CPT_TEST_DB_PASSWORD}"
    monkeypatch.setenv("CPT_TEST_DB_PASSWORD", "p@ss word")
    resolved = resolve(url)
    assert "p%40ss+word" in resolved or "p%40ss%20word" in resolved
    assert "p@ss" not in shown_url(resolved) and "***" in shown_url(resolved)
    assert "sslmode=require" in shown_url(resolved)


@pytest.mark.parametrize(
    "storage",
    [
        "sqlite:///${CPT_TEST_SECRET}.db",
        "postgresql://u@db/x?password=" + SECRET,
        "sqlite:///DIR/x.db",
        f"postgresql://u:{SECRET}@db:!1/x",  # a port that is no number: SQLAlchemy's ValueError, a traceback
    ],
)
def test_status_of_a_planted_run_record_prints_no_secret_and_creates_nothing(storage, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CPT_TEST_SECRET", SECRET)
    monkeypatch.chdir(tmp_path)
    run = RunDir(tmp_path / "runs" / "planted")
    run.path.mkdir(parents=True)
    planted = {"study_name": "planted", "storage": storage.replace("DIR", str(tmp_path))}
    run.run_json.write_text(RUN_RECORD.dumps_data(planted))
    before = sorted(tmp_path.rglob("*"))

    for command in (["status", str(run.path)], ["report", str(run.path)]):
        assert main(command) == 2
        captured = capsys.readouterr()
        assert SECRET not in captured.out + captured.err
        assert str(run.run_json) in captured.err and len(captured.err.strip().splitlines()) == 1
    assert sorted(tmp_path.rglob("*")) == before


def test_a_url_sqlalchemy_cannot_parse_is_shown_shortened_never_raised():
    """A damaged run.json's storage (or jobs.json's address) is quoted in its own error: make_url raised a bare
    ValueError for a port that is no number, and the error message became a traceback."""
    assert shown_url("http://127.0.0.1:!265") == repr("http://127.0.0.1:!265")
    assert len(shown_url("http://h:!1/" + "x" * 10_000)) < 120
    # Its passwords are masked as text: the user info's (up to its last '@') and a password parameter's.
    assert shown_url(f"postgresql://u:{SECRET}@db:!1/x") == repr("postgresql://u:***@db:!1/x")
    assert shown_url(f"postgresql://u:p@{SECRET}@db:!1/x") == repr("postgresql://u:***@db:!1/x")
    assert shown_url(f"postgresql://u@db:!1/x?sslmode=a&PWD={SECRET}&b=1") == repr(
        "postgresql://u@db:!1/x?sslmode=a&PWD=***&b=1"
    )


def test_a_run_record_whose_storage_port_is_no_number_is_refused_naming_the_file_and_field(tmp_path, capsys):
    run = RunDir(tmp_path / "runs" / "port")
    run.path.mkdir(parents=True)
    run.run_json.write_text(RUN_RECORD.dumps_data({"study_name": "port", "storage": "postgresql://u@db:!1/x"}))
    assert main(["status", str(run.path)]) == 2
    error = capsys.readouterr().err
    assert f"{run.run_json} is not a run record" in error and "storage: " in error
    assert "'postgresql://u@db:!1/x'" in error


def test_a_sqlite_storage_that_is_another_kind_of_file_is_refused_before_it_is_opened(tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("not a database\n")
    with pytest.raises(StorageError, match=rf"{notes} exists and is not a SQLite database"):
        check_url(f"sqlite:///{notes}")
    with pytest.raises(StorageError, match=rf"{tmp_path} is a directory"):
        check_url(f"sqlite:///{tmp_path}")
    # A run record is read back through check_url too; open_storage stands alone as well.
    with pytest.raises(StorageError) as refused:
        open_storage(f"sqlite:///{notes}")
    assert "cannot be read as an Optuna storage (DatabaseError: (sqlite3.DatabaseError) file is" in str(refused.value)
    assert "\n" not in str(refused.value) and notes.read_text() == "not a database\n"


@pytest.mark.parametrize(
    ("storage", "message"),
    [
        ("postgresql://optuna:${CPT_TEST_SECRET}@127.0.0.1:1/optuna", "postgresql driver 'psycopg' is not installed"),
        ("foo://db/optuna", "'foo' is not a database SQLAlchemy knows"),
    ],
)
def test_sweep_run_with_a_database_this_machine_has_no_driver_for_exits_2_and_writes_nothing(
    storage, message, write_tiny_spec, tmp_path, monkeypatch, capsys
):
    if "psycopg" in message and importlib.util.find_spec("psycopg") is not None:
        pytest.skip("psycopg is installed here")
    monkeypatch.setenv("CPT_TEST_SECRET", SECRET)
    monkeypatch.chdir(tmp_path)
    spec = write_tiny_spec(f"driver-{storage[:3]}.yaml", execution={"storage": storage})
    assert main(["run", str(spec)]) == 2
    error = capsys.readouterr().err
    assert f"{spec}: execution.storage" in error and message in error and SECRET not in error
    assert len(error.strip().splitlines()) == 1 and not (tmp_path / "runs").exists()
