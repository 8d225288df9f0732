"""Every record a command reads back is fuzzed as an editor would damage it: one field set to a value of its own type
(near, zero, negative, tiny, huge) or of another (a boolean, a string, a path, null, a list, an object), or a key
added; the command that reads it (promote plan for best.json and trial_config.json, promote watch for plan.json,
job.json and the log) either answers exactly as it did from the untouched file (exit 0) or refuses in one line
(exit 2), never a traceback, and never writes outside the run. Seeded and bounded (tests/fuzzing.py's settings), on
one run per module. The pick's and the confirmation's `reason` prose is carried into the plan as written: the answer
compared is the plan without it. `sweep status` and `sweep report` never answer from best.json: an edited pick prints
what the untouched run prints."""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, seed, settings
from hypothesis import strategies as st

from cli import main
from tests.fuzzing import SHORT, leaves, replaced
from tests.hostile import tree
from tests.sweep.promote.launch.test_watch_report import MEGATRON_LOG, rehearsed
from tests.sweep.promote.promote_runs import surrogate_pick, write_run

FUZZ = settings(SHORT, max_examples=20, database=None)
"""Bounded: about 0.3 s an example, once the modules are imported (the slow-marked long fuzz of best.json is
tests/sweep/promote/point/test_provenance.py's). Seeded with SEED: the same examples every run."""
SEED = 7
"""A seed whose 20 examples of each record include edits the code before issue 52 answered differently to."""
PROMOTE = ["promote", "plan", "{run}", "--target", "llama3.1-8b", "--unconfirmed"]


def other_values(value: Any) -> list[Any]:
    """Values an edit may put in place of `value`: of its own type first, then of others."""
    if isinstance(value, bool):
        own = [not value]
    elif isinstance(value, int | float):
        own = [value * (1 + 1e-6) + 1e-9, value * 2, -value, 0, 1e-300, 1e300, float(value) if isinstance(value, int)
               else round(value)]  # fmt: skip
    elif isinstance(value, str):
        own = ["", value + "x", "x" * 1000, "../../outside", "abc"]
    elif isinstance(value, list):
        own = [[], value + value[:1]]
    elif isinstance(value, dict):
        own = [{}, {**value, "unknown_key": 1}]
    else:
        own = []
    return [*own, None, True, "1", "not a value", [1], {"a": 1}, 7, -1.5]


FOCUS = {
    "best.json": ("pick", "best_observed", "pareto_front"),
    "trial_config.json": ("proxy", "non_english_share", "max_lr", "base_losses", "seed", "lr_fraction"),
    "plan.json": ("prediction", "sweep", "run.data.valid", "run.optimization", "tokens", "global_batch_tokens"),
    "job.json": ("watch", "steps", "name"),
}
"""Per record, the fields its command answers from: half of the edits land there, half anywhere in the file."""


@st.composite
def edited(draw, document: dict, record: str) -> dict:
    """`document` with one of its fields given another value."""
    places = list(leaves(document))
    focused = [(at, value) for at, value in places if ".".join(map(str, at)).startswith(FOCUS[record])]
    at, value = draw(st.sampled_from(focused if focused and draw(st.booleans()) else places))
    return replaced(document, at, draw(st.sampled_from(other_values(value))))


def without_prose(value: Any) -> Any:
    """The plan as an answer: every `reason` (prose carried from best.json as written) left out."""
    if isinstance(value, dict):
        return {key: without_prose(item) for key, item in value.items() if key != "reason"}
    if isinstance(value, list):
        return [without_prose(item) for item in value]
    return value


def quietly(argv: list[str]) -> tuple[int, str, str]:
    """main(argv) with its stdout and stderr captured."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(argv)
    return code, out.getvalue(), err.getvalue()


def promoted(root: Path) -> tuple[int, Any, str]:
    """`sweep promote plan` of the run under `root`, and its answer: the plan it wrote, but its prose."""
    run_dir = root / "runs" / "lr_mix"
    code, _, err = quietly([part.format(run=run_dir) for part in PROMOTE])
    plans = list((run_dir / "promotion").glob("*/plan.json"))
    data = json.loads(plans[0].read_text()) if code == 0 and len(plans) == 1 else None
    return code, without_prose({k: v for k, v in (data or {}).items() if k != "written_by"}), err


def watched(root: Path, *flags: str) -> tuple[int, Any, str]:
    """`sweep promote watch` of the run under `root`, and its answer: the table it printed, paths relative to root."""
    code, out, err = quietly(["promote", "watch", str(root / "runs" / "lr_mix"), *flags])
    return code, out.replace(str(root), "<root>"), err


EXPECTED: dict[Path, tuple[int, Any, str]] = {}
"""The untouched run's answer, by the root its copies are made at (each test makes them at one)."""


def fuzzed(pristine: Path, root: Path, record: str, document: dict, command: Callable[[Path], tuple]) -> None:
    """`record` of a fresh copy of the run replaced by `document`; `command` answers as from the untouched copy
    (exit 0) or refuses in one line (exit 2), never a traceback, and writes nothing outside the run."""
    if root not in EXPECTED:
        shutil.rmtree(root, ignore_errors=True)
        shutil.copytree(pristine, root, symlinks=True)
        EXPECTED[root] = command(root)
        assert EXPECTED[root][0] == 0, EXPECTED[root][2]
    expected = EXPECTED[root]
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(pristine, root, symlinks=True)
    next((root / "runs" / "lr_mix").rglob(record)).write_text(json.dumps(document))
    outside = {name: info for name, info in tree(root).items() if not name.startswith("runs")}
    code, answer, err = command(root)
    assert code in (0, 2) and "Traceback" not in err, err
    if code == 2:
        (line,) = err.strip().splitlines()
        assert line.startswith("error: ") and len(line) < 2000, line
    else:
        assert answer == expected[1]
    assert {name: info for name, info in tree(root).items() if not name.startswith("runs")} == outside


@pytest.fixture(scope="module")
def promote_run(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("edited-best")
    write_run(root / "runs" / "lr_mix", pick=surrogate_pick(0.13, "1:2"))
    return root


@pytest.fixture(scope="module")
def watch_run(tmp_path_factory) -> Path:
    """A run whose plan was rehearsed (its job.json and job.log), beside a --log of the plan's own launch."""
    root = tmp_path_factory.mktemp("edited-plan")
    rehearsed(root / "runs" / "lr_mix", {0: (2.0, 3.0), 10: (2.01, 2.7), 20: (2.2, 2.6), 30: (2.2, 2.5)})
    log = root / "pretrain_gpt.log"
    log.write_text("\n".join(line for line in MEGATRON_LOG.splitlines() if "validation-2" not in line) + "\n")
    return root


def record_of(root: Path, name: str) -> dict:
    return json.loads(next((root / "runs" / "lr_mix").rglob(name)).read_text())


@FUZZ
@seed(SEED)
@given(data=st.data())
@pytest.mark.parametrize("record", ["best.json", "trial_config.json"])
def test_an_edited_record_promotes_as_before_or_is_exit_2(record, promote_run, data, tmp_path_factory):
    root = tmp_path_factory.getbasetemp() / f"fuzz-{record}"
    fuzzed(promote_run, root, record, data.draw(edited(record_of(promote_run, record), record)), promoted)


@FUZZ
@seed(SEED)
@given(data=st.data())
@pytest.mark.parametrize("record", ["plan.json", "job.json"])
def test_an_edited_plan_or_job_is_watched_as_before_or_is_exit_2(record, watch_run, data, tmp_path_factory):
    root = tmp_path_factory.getbasetemp() / f"fuzz-{record}"
    flags = ["--log", str(root / "pretrain_gpt.log")] if record == "plan.json" else []
    document = data.draw(edited(record_of(watch_run, record), record))
    fuzzed(watch_run, root, record, document, lambda copy: watched(copy, *flags))


LOSS = re.compile(r"lm loss value: (\S+)")
ITERATION = re.compile(r"iteration (\d+)")
SET = re.compile(r"validation-(\d+)")


@st.composite
def edited_log(draw, lines: list[str]) -> list[str]:
    """`lines` with one validation line's loss, iteration or set changed (or its form broken), maybe repeated."""
    lines = list(lines)
    index = draw(st.sampled_from([k for k, line in enumerate(lines) if SET.search(line)]))
    line = lines[index]
    loss, iteration = float(LOSS.search(line)[1]), int(ITERATION.search(line)[1])
    kind = draw(st.sampled_from(["loss", "iteration", "set", "form"]))
    if kind == "loss":
        value = draw(st.sampled_from([-loss, 0.0, loss * 1.01, loss * 50, 1e-300, 1e300, float("nan"), float("inf")]))
        line = LOSS.sub(f"lm loss value: {value:.6E}", line)
    elif kind == "iteration":
        value = draw(st.sampled_from([0, 1, iteration + 1, iteration * 100, 10**30]))
        line = ITERATION.sub(f"iteration {value}", line)
    elif kind == "set":
        line = SET.sub(f"validation-{draw(st.sampled_from([0, 1, 2, 7]))}", line)
    else:
        line = line.replace(draw(st.sampled_from(["|", "lm loss value", "validation-"])), "")
    lines[index] = line
    if draw(st.booleans()):
        lines.append(line)
    return lines


@FUZZ
@seed(SEED)
@given(data=st.data())
def test_an_edited_log_is_watched_within_bounds_or_is_exit_2(data, watch_run, tmp_path_factory):
    """A log's figures are evidence: on exit 0 every one printed is finite, the iterations go forward, and forgetting
    stays above -1 (no loss was 0 or negative)."""
    root = tmp_path_factory.getbasetemp() / "fuzz-log"
    shutil.rmtree(root, ignore_errors=True)
    shutil.copytree(watch_run, root, symlinks=True)
    log = root / "pretrain_gpt.log"
    log.write_text("\n".join(data.draw(edited_log(log.read_text().splitlines()))) + "\n")
    outside = {name: info for name, info in tree(root).items() if not name.startswith("runs")}
    code, out, err = watched(root, "--log", str(log))
    assert code in (0, 2) and "Traceback" not in err, err
    if code == 0:
        rows = [row.split() for row in out.splitlines() if row.split()[:1] and row.split()[0].isdigit()]
        steps = [int(row[0]) for row in rows]
        assert steps == sorted(set(steps))
        for row in rows:
            gain, forgetting = float(row[2]), float(row[3])
            assert math.isfinite(gain) and math.isfinite(forgetting) and forgetting > -1
    else:
        (refusal,) = err.strip().splitlines()
        assert refusal.startswith("error: ") and len(refusal) < 2000
    assert {name: info for name, info in tree(root).items() if not name.startswith("runs")} == outside


@pytest.mark.parametrize(
    "edit",
    [("pick", "point", "lr_fraction", 5), ("pick", "point", "mix", "abc"), ("pick", "forgetting", "high", 0.5)],
    ids=["lr_fraction 5", "mix abc", "forgetting.high 0.5"],
)
def test_status_and_report_answer_from_the_study_whatever_best_json_says(edit, promote_run, tmp_path):
    """What `sweep status` and `sweep report` print of the pick is computed from the study, as `sweep run` writes
    best.json, never read from best.json: an edited pick prints what the untouched run prints."""
    answers = []
    for name, edited_pick in [("original", False), ("modified", True)]:
        root = tmp_path / name  # names of one length: a table centres its title on it
        shutil.copytree(promote_run, root, symlinks=True)
        run_dir = root / "runs" / "lr_mix"
        if edited_pick:
            (run_dir / "best.json").write_text(json.dumps(replaced(record_of(root, "best.json"), edit[:-1], edit[-1])))
        status = quietly(["status", str(run_dir)])
        report = quietly(["report", str(run_dir), "--output", str(root / "report")])
        assert status[0] == report[0] == 0, status[2] + report[2]
        answers.append((status[1].replace(str(root), "<root>"), (root / "report" / "report.md").read_text()))
    assert answers[0][0] == answers[1][0]
    assert _undated(answers[0][1], tmp_path) == _undated(answers[1][1], tmp_path)


def _undated(markdown: str, root: Path) -> str:
    """report.md without the time it was taken at and the folders the two copies lie in."""
    text = markdown.replace(str(root / "original"), "<root>").replace(str(root / "modified"), "<root>")
    return re.sub(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d(:\d\d)?(Z|\+00:00| UTC)?", "<time>", text)
