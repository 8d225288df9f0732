"""Reading a run loads no training stack: `sweep status` and the CLI's table of input errors import neither
torch, Ray nor megatron-core, whose imports alone take ~15 s on a 2-core machine."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import REPO

TRAINING_STACK = ("torch", "ray", "megatron", "transformers", "wandb")


def test_the_modules_that_read_a_run_import_no_training_stack():
    readers = [  # what `sweep status` loads, of a sweep and of a ladder
        *("cli", "cli.errors", "cli.status", "reports.console", "sweep.files.rundir", "sweep.choice.best"),
        *("sweep.choice.observed", "sweep.study.table", "sweep.study.record", "sweep.ladder.record", "reports.tables"),
        "reports.ladder_report",
    ]
    probe = (
        f"import sys\nimport {', '.join(readers)}\n"
        f"print(sorted({{name.split('.')[0] for name in sys.modules}} & {set(TRAINING_STACK)!r}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout
