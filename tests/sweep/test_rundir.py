from pathlib import Path

from sweep.rundir import SPEC_COPY, write_spec_copy
from sweep.spec import load_spec


def test_spec_copy_loads_from_the_run_directory(tiny_spec_path: Path, tmp_path: Path):
    """The copy must not depend on the original spec's folder: its relative corpus paths are resolved."""
    spec = load_spec(tiny_spec_path)
    run_dir = tmp_path / "elsewhere" / "run"
    run_dir.mkdir(parents=True)
    write_spec_copy(spec, run_dir)
    copy = load_spec(run_dir / SPEC_COPY)
    assert copy == spec
    assert copy.data.domain.train.is_absolute()
