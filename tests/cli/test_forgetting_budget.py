"""A forgetting budget of 0.1 or more (general loss allowed to rise 10 %, ten times the reference recipe's ~1 %) is
warned about with its unit before anything runs, in a spec and in `sweep law fit --budget`: a budget of 1, general
loss allowed to double, was seen given where 0.01 was meant."""

from __future__ import annotations

import pytest

from cli import main
from sweep.spec.spec import LARGE_BUDGET, forgetting_budget_warning
from tests.sweep.law.test_law_cli import EXAMPLE

UNIT = "1 = general loss may double); did you mean 0.01?"


@pytest.mark.parametrize(("budget", "warned"), [(0.01, False), (0.099, False), (LARGE_BUDGET, True), (1.0, True)])
def test_a_budget_of_a_tenth_or_more_is_warned_about_with_its_unit(budget, warned):
    warning = forgetting_budget_warning(budget, key="objective.forgetting_budget")
    assert (warning is not None) == warned
    if warned:
        assert warning.startswith(f"objective.forgetting_budget = {budget:g} lets general loss rise {budget:.0%}")
        assert f"did you mean {budget / 100:g}?" in warning
    if budget == 1.0:
        assert warning.endswith(f"(0.01 = general loss may rise 1 %, {UNIT}")


def test_sweep_run_warns_about_the_specs_budget_before_anything_runs(write_tiny_spec, capsys, monkeypatch, tmp_path):
    """The warning comes before Ray is joined: here a remote --address without --allow-remote then stops the run."""
    monkeypatch.chdir(tmp_path)
    spec = write_tiny_spec("budget.yaml", objective={"forgetting_budget": 1})
    assert main(["run", str(spec), "--address", "10.1.2.3:6379"]) == 2
    captured = capsys.readouterr()
    assert f"warning: {spec}: objective.forgetting_budget = 1 lets general loss rise 100%" in " ".join(
        captured.out.split()
    )
    assert UNIT in " ".join(captured.out.split()) and "10.1.2.3" in captured.err
    assert not (tmp_path / "runs").exists()


def test_law_fit_warns_about_its_budget(tmp_path, capsys):
    """Before the --output check that refuses a folder here, so before any fitting."""
    argv = ["law", "fit", str(EXAMPLE), "--target", "llama3.1-70b", "--budget", "1", "--output", str(tmp_path)]
    assert main(argv) == 2
    warning, error = capsys.readouterr().err.strip().splitlines()
    assert warning == (
        "warning: --budget = 1 lets general loss rise 100% over the base's: the budget is a fraction (0.01 = general "
        f"loss may rise 1 %, {UNIT}"
    )
    assert error.startswith("error: --output")
