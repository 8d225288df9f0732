"""A job's log is bounded evidence: every validation loss finite and within [MIN_LOSS, MAX_LOSS] nats, the base's
too, each set's iterations going forward to the run's last, an iteration logged again only with the same losses;
each refusal is exit 2 naming the log and the line, with nothing written (issue 52: losses of -2 and 0 gave negative
forgetting and the verdict "within", base losses of 0, 1e-300 and 1e300 were measured against, iteration 1e30 and
iterations out of order were read, and a negative base loss was a pydantic traceback)."""

from __future__ import annotations

import pytest

from cli import main
from tests.hostile import files_but_the_study
from tests.sweep.promote.launch.test_watch_report import MEGATRON_LOG, planned, rehearsed
from train_entry.trial_config import MAX_LOSS, MIN_LOSS

LINES = MEGATRON_LOG.splitlines()
BASE_GENERAL, TRAINED_GENERAL = 4, 10
"""Lines (0-based) of MEGATRON_LOG: the general set's loss at iteration 0, and at iteration 2080."""


def with_loss(index: int, loss: str) -> list[str]:
    lines = list(LINES)
    lines[index] = lines[index].replace(lines[index].split("lm loss value: ")[1].split(" |")[0], loss)
    return lines


def with_iteration(index: int, iteration: str) -> list[str]:
    lines = list(LINES)
    lines[index] = lines[index].replace("iteration 2080", f"iteration {iteration}")
    return lines


OUT_OF_RANGE = f"outside [{MIN_LOSS:g}, {MAX_LOSS:g}] nats per token"
REFUSED = {
    "an evaluation's loss of -2": (with_loss(TRAINED_GENERAL, "-2.000000E+00"), TRAINED_GENERAL, OUT_OF_RANGE),
    "an evaluation's loss of 0": (with_loss(TRAINED_GENERAL, "0.000000E+00"), TRAINED_GENERAL, OUT_OF_RANGE),
    "an evaluation's loss of 1e300": (with_loss(TRAINED_GENERAL, "1.000000E+300"), TRAINED_GENERAL, OUT_OF_RANGE),
    "an evaluation's loss of nan": (with_loss(TRAINED_GENERAL, "NAN"), TRAINED_GENERAL, "not a finite loss"),
    "a base loss of 0": (with_loss(BASE_GENERAL, "0.000000E+00"), BASE_GENERAL, OUT_OF_RANGE),
    "a base loss of 1e-300": (with_loss(BASE_GENERAL, "1.000000E-300"), BASE_GENERAL, OUT_OF_RANGE),
    "a base loss of 1e300": (with_loss(BASE_GENERAL, "1.000000E+300"), BASE_GENERAL, OUT_OF_RANGE),
    "a negative base loss": (with_loss(BASE_GENERAL, "-3.000000E+00"), BASE_GENERAL, OUT_OF_RANGE),
    "iteration 1e30": (
        with_iteration(TRAINED_GENERAL, "1" + "0" * 30),
        TRAINED_GENERAL,
        "iteration 1e+30 is past the run's last iteration 84,772",
    ),
    "iterations out of order": (
        [*LINES, LINES[TRAINED_GENERAL].replace("iteration 2080", "iteration 1040")],
        len(LINES),
        "iteration 1040 of validation set 0 after iteration 2080",
    ),
    "an iteration logged twice with other losses": (
        [*LINES, LINES[TRAINED_GENERAL].replace("2.020000E+00", "2.500000E+00")],
        len(LINES),
        "iteration 2080 of validation set 0 is logged twice with different losses (2.02 at",
    ),
    "a loss of a million digits": (
        with_loss(TRAINED_GENERAL, "1" * 1_000_000), TRAINED_GENERAL, "is inf: not a finite"
    ),
}


@pytest.mark.parametrize("case", REFUSED.values(), ids=list(REFUSED))
def test_a_log_line_that_is_no_evidence_is_exit_2_naming_the_file_and_line(case, finished_run, tmp_path, capsys):
    lines, index, message = case
    run_dir = planned(finished_run)
    log = tmp_path / "pretrain_gpt.log"
    log.write_text("\n".join(lines) + "\n")
    before = files_but_the_study(tmp_path)
    capsys.readouterr()

    assert main(["promote", "watch", str(run_dir), "--log", str(log)]) == 2

    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {log}, line {index + 1}: ") and message in line, line
    assert len(line) < 500 and files_but_the_study(tmp_path) == before


def test_a_log_given_twice_reads_as_once(finished_run, tmp_path, capsys):
    run_dir = planned(finished_run)
    log = tmp_path / "pretrain_gpt.log"
    log.write_text(MEGATRON_LOG)
    capsys.readouterr()
    assert main(["promote", "watch", str(run_dir), "--log", str(log)]) == 0
    once = capsys.readouterr().out
    assert main(["promote", "watch", str(run_dir), "--log", str(log), "--log", str(log)]) == 0
    twice = capsys.readouterr().out
    assert twice.replace(f"{log}, {log}", str(log)) == once


def test_a_rehearsals_log_is_held_to_the_same_bounds(tmp_path, capsys):
    job_dir = rehearsed(tmp_path / "lr_mix", {0: (2.0, 3.0), 10: (-2.0, 2.7)})
    before = files_but_the_study(tmp_path)
    assert main(["promote", "watch", str(tmp_path / "lr_mix")]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {job_dir / 'job.log'}, line 4: validation set 0's loss at iteration 10 is -2")
    assert files_but_the_study(tmp_path) == before
