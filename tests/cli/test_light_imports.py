"""Reading a run loads no training stack: `sweep status` and the CLI's table of input errors import neither
torch, Ray nor megatron-core, whose imports alone take ~15 s on a 2-core machine."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.conftest import REPO

TRAINING_STACK = ("torch", "ray", "megatron", "transformers", "wandb")


def test_the_modules_that_read_a_run_import_no_training_stack():
    readers = [  # what `sweep status` loads, of a sweep and of a ladder
        *("cli", "cli.errors", "cli.status", "reports.console", "sweep.files.rundir", "sweep.choice.best"),
        *("sweep.choice.observed", "sweep.study.table", "sweep.study.record", "sweep.ladder.record", "reports.tables"),
        "sweep.study.run_study",
        "reports.ladder_report",
    ]
    probe = (
        f"import sys\nimport {', '.join(readers)}\n"
        f"print(sorted({{name.split('.')[0] for name in sys.modules}} & {set(TRAINING_STACK)!r}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


def test_a_trial_process_loads_none_of_the_rules_that_choose_the_point():
    """Each Tune trial's process reads the spec, the run directory and the study; the rules that choose the point
    (the surrogate's scipy.stats and scikit-learn, ~1.5 s of CPU) are the driver's."""
    probe = (
        "import sys\nimport sweep.run.trainable\n"
        "print(sorted({'scipy.stats', 'sklearn', 'sweep.choice.surrogate', 'sweep.choice.pick'} & set(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]", done.stdout


@pytest.mark.slow
def test_a_sweep_whose_data_and_base_are_cached_runs_its_driver_without_the_trial_stack(tiny_sweep, tmp_path):
    """`sweep run` hands each trial to a Ray worker: its own process, once the tokenizer, the corpora's samples, the
    base and its losses are cached (every sweep of a spec but the first), loads neither torch, transformers nor
    megatron-core (~5 s of CPU at every start), nor do the loggers Ray Tune adds to the driver's callbacks (its
    TensorBoard logger imports torch; that private function of Ray Tune is what Tuner.fit calls), nor does the
    report it writes at the end of a run nothing was promoted from (a watched job's record reaches megatron-core)."""
    probe = (
        "import sys\nfrom pathlib import Path\n"
        "import cli.run, sweep.ladder.driver, sweep.run.driver, sweep.run.trainable\n"
        "from sweep.run.prepare import prepare\nfrom sweep.spec.spec import load_spec\n"
        f"prepare(load_spec(Path({str(tiny_sweep.spec)!r})))\n"
        "from ray.tune.utils.callback import _create_default_callbacks\n"
        "sweep.run.driver.quiet_tune()\n_create_default_callbacks([])\n"
        "from reports.report import write_run_report\n"
        f"write_run_report(Path({str(tiny_sweep.run_dir)!r}), Path({str(tmp_path / 'report')!r}))\n"
        f"print(sorted({{name.split('.')[0] for name in sys.modules}} & {set(TRAINING_STACK) - {'ray'}!r}))"
    )
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "[]", done.stdout
