"""The default sweep's real trials (the README's run, `sweep run search_spaces/lr_mix.yaml`), as scripted rows: two
tried points gain more than its pick but fail the budget rule, a pruned trial forgot five times the budget, and
confirmation moved the pick to its second candidate."""

from __future__ import annotations

import json
from pathlib import Path

from sweep.spec.spec import load_spec
from sweep.study.row import TrialRow
from sweep.study.study import SweepPlan
from tests.sweep.scripted import DEFAULT_SPEC

ROWS = Path(__file__).with_name("default_run_rows.json")


def default_run() -> tuple[list[TrialRow], SweepPlan]:
    rows = [TrialRow.model_validate(row) for row in json.loads(ROWS.read_text())]
    return rows, load_spec(DEFAULT_SPEC).plan()
