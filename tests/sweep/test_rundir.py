from pathlib import Path

import pytest

from sweep.cli import main
from sweep.rundir import SPEC_COPY, RunInfo, write_spec_copy
from sweep.spec import SpecError, load_spec


def test_spec_copy_loads_from_the_run_directory(tiny_spec_path: Path, tmp_path: Path):
    """The copy must not depend on the original spec's folder: its relative corpus paths are resolved."""
    spec = load_spec(tiny_spec_path)
    run_dir = tmp_path / "elsewhere" / "run"
    run_dir.mkdir(parents=True)
    write_spec_copy(spec, run_dir)
    copy = load_spec(run_dir / SPEC_COPY)
    assert copy == spec
    assert copy.data.domain.train.is_absolute()


def test_a_storage_password_is_read_from_the_environment_and_stays_out_of_the_run_directory(
    write_tiny_spec, tmp_path: Path, monkeypatch
):
    reference = "postgresql://optuna:${CPT_TEST_DB_PASSWORD}@127.0.0.1:5432/optuna"
    spec = load_spec(write_tiny_spec("pg.yaml", search={"storage": reference}))
    monkeypatch.setenv("CPT_TEST_DB_PASSWORD", "s3cret-5b1e")
    info = RunInfo(study_name="pg", storage=spec.search.storage)
    assert info.url(tmp_path) == "postgresql://optuna:s3cret-5b1e@127.0.0.1:5432/optuna"

    write_spec_copy(spec, tmp_path)
    info.write(tmp_path)
    assert RunInfo.read(tmp_path).storage == reference
    for path in tmp_path.iterdir():
        assert "s3cret-5b1e" not in path.read_text(), path


def test_an_unset_storage_variable_stops_the_run_before_anything_is_written(write_tiny_spec, tmp_path, monkeypatch):
    spec = write_tiny_spec("unset.yaml", search={"storage": "sqlite:///${CPT_TEST_UNSET_DIR}/optuna.db"})
    monkeypatch.delenv("CPT_TEST_UNSET_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SpecError, match=r"search.storage .* refers to CPT_TEST_UNSET_DIR, which is not set"):
        RunInfo(study_name="unset", storage=load_spec(spec).search.storage).url(tmp_path)
    assert main(["run", str(spec)]) == 2
    assert not (tmp_path / "runs").exists()
