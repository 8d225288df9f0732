"""Every file the tool reads back goes through read_model: each field of each file written with a wrong type, an
unknown key beside it, or a value past its bounds is one CorruptFile naming the file and the key, never a traceback
and never a value taken as it is; random bytes and random damage to a valid file are the same (fuzzed). A sharded
trial's progress.json is read by train_entry (which cannot import sweep) with the same model and format, and a
refused one is passed over (tests/train_entry/sharded/test_checkpoint.py)."""

from __future__ import annotations

import json
import math
import shutil
import types
import typing
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import BaseModel

from sweep.choice.best import BestSummary
from sweep.files.compat import BEST, CHECKPOINT_PROGRESS, JOBS, LADDER, PLAN, RUN_RECORD, SHIPPED_BASE, FileFormat
from sweep.files.records import CorruptFile, read_model
from sweep.files.rundir import RunDir, RunRecord
from sweep.ladder.record import LadderSummary
from sweep.promote.launch.job_records import JobRecord, JobRecords
from sweep.promote.plan.plan import Plan, make_plan
from sweep.promote.request.config import PromotionConfig
from sweep.run.shipped_base import ShippedManifest
from tests.conftest import REPO
from tests.fuzzing import LONG, SHORT, STAMP, Path_, damaged, leaves, replaced
from tests.sweep.promote.promote_runs import write_run
from tests.train_entry.sharded.test_checkpoint import saved_at, trial_config
from train_entry.sharded.checkpoint import SavedProgress

JOB = {"submission_id": "cpt-p-1", "plan_id": "p-1", "attempt": 1, "address": "http://127.0.0.1:8265"}


@pytest.fixture(scope="module")
def files(tmp_path_factory, scripted_ladder_run) -> dict[str, tuple[Path, type[BaseModel], FileFormat]]:
    """One valid file of each kind the tool reads back, as the tool writes it."""
    root = tmp_path_factory.mktemp("read-back")
    ladder = root / "ladder.json"
    shutil.copyfile(scripted_ladder_run / "ladder.json", ladder)
    run = RunDir(write_run(root / "runs" / "lr_mix"))
    plan = root / "plan.json"
    plan.write_text(PLAN.dumps(make_plan(run.path, PromotionConfig(target="llama3.1-8b"))))
    jobs = root / "jobs.json"
    submitted = datetime(2026, 11, 26, tzinfo=UTC)
    jobs.write_text(JOBS.dumps(JobRecords(jobs=[JobRecord(**JOB, submitted_at=submitted)])))
    run.write_record(RunRecord(study_name="lr_mix", storage=None))
    manifest = root / "cpt_sweep_base.json"
    shutil.copyfile(REPO / "data" / "tiny-llama" / "cpt_sweep_base.json", manifest)
    progress = root / "progress.json"
    progress.write_text(CHECKPOINT_PROGRESS.dumps(saved_at(trial_config(root), 20)))
    return {
        "progress.json": (progress, SavedProgress, CHECKPOINT_PROGRESS),
        "ladder.json": (ladder, LadderSummary, LADDER),
        "best.json": (run.best_json, BestSummary, BEST),
        "plan.json": (plan, Plan, PLAN),
        "jobs.json": (jobs, JobRecords, JOBS),
        "run.json": (run.run_json, RunRecord, RUN_RECORD),
        "cpt_sweep_base.json": (manifest, ShippedManifest, SHIPPED_BASE),
    }


def wrong_type(value: Any) -> Any:
    """A JSON value of a type no field of `value`'s kind takes, even in pydantic's lax mode."""
    if isinstance(value, bool):
        return "maybe"
    if isinstance(value, int | float):
        return "not a number"
    if isinstance(value, list):
        return "not a list"
    if isinstance(value, dict):
        return "not an object"
    return {"not": "this type"}


def dotted(at: Path_) -> str:
    return ".".join(str(part) for part in at)


def refused(path: Path, model: type[BaseModel], fmt: FileFormat, data: Any) -> str:
    path.write_text(json.dumps(data))
    with pytest.raises(CorruptFile) as raised:
        read_model(path, model, fmt=fmt)
    message = str(raised.value)
    assert str(path) in message and "\n" not in message
    return message


NAMES = ["progress.json", "ladder.json", "best.json", "plan.json", "jobs.json", "run.json", "cpt_sweep_base.json"]
FREE_FORM = {"cpt_sweep_base.json": {("recipe",), ("built_with",), ("final",)}}
"""Maps whose keys are names (spec keys, tools, measurements) and whose values may be strings: a shipped base's
recipe is compared whole with what the spec would make, so any change there is a base that is not the shipped one
(rebuilt), never a value trusted."""


NAMED_MAPS = {"ladder.json": {("values",)}}
"""Maps whose keys are names a validator of the object holding them checks as a set (a law form's parameters): the
error names that object and the key that does not belong."""


def free_form(name: str, at: Path_) -> bool:
    """Whether `at` is one of the file's free-form maps or inside one."""
    return any(at[: len(prefix)] == prefix for prefix in FREE_FORM.get(name, ()))


@pytest.mark.parametrize("name", NAMES)
def test_each_field_of_a_wrong_type_is_refused_naming_its_key(name, files, tmp_path):
    path, model, fmt = files[name]
    data, copy = json.loads(path.read_text()), tmp_path / name
    for at, value in leaves(data):
        if free_form(name, at[:-1]):
            continue
        message = refused(copy, model, fmt, replaced(data, at, wrong_type(value)))
        # A tagged union's tag (a pruner's type) is named by its object, with the tags it takes.
        named = dotted(at[:-1]) if "does not match any of the expected tags" in message else dotted(at)
        assert f" {named}" in message, (at, message)


@pytest.mark.parametrize("name", NAMES)
def test_an_unknown_key_in_each_object_is_refused_naming_it(name, files, tmp_path):
    path, model, fmt = files[name]
    data, copy = json.loads(path.read_text()), tmp_path / name
    objects = [(), *(at for at, value in leaves(data) if isinstance(value, dict))]
    for at in objects:
        if free_form(name, at):
            continue
        changed = json.loads(json.dumps(data))
        target = changed
        for part in at:
            target = target[part]
        target["unknown_key"] = 1
        message = refused(copy, model, fmt, changed)
        if at[-1:] in NAMED_MAPS.get(name, ()):
            assert f"{dotted(at[:-1])}: " in message and "unknown_key" in message, (at, message)
        else:
            assert dotted((*at, "unknown_key")) in message, (at, message)


def bounds(model: type[BaseModel], data: dict, at: Path_ = ()) -> Iterator[tuple[Path_, Any]]:
    """(path, a value just past the bound) for each field of `model` in `data` that declares bounds."""
    for key, value in data.items():
        field = model.model_fields.get(key)
        if field is None:
            continue
        for limit in field.metadata:
            past = _past(limit, value)
            if past is not None:
                yield (*at, key), past
        inner = _model_in(field.annotation)
        if inner is not None and isinstance(value, dict):
            yield from bounds(inner, value, (*at, key))
        elif inner is not None and isinstance(value, list) and value and isinstance(value[0], dict):
            yield from bounds(inner, value[0], (*at, key, 0))


def _past(limit: Any, value: Any) -> Any:
    if isinstance(value, bool) or not isinstance(value, int | float | str | list):
        return None

    def step(bound: float) -> float:  # past the bound by more than a float's rounding at its size
        return 1 if isinstance(value, int) else max(abs(bound) * 1e-6, abs(value) * 1e-6, 1e-9)

    if isinstance(limit, annotated_types.Ge) and not isinstance(value, str | list):
        return limit.ge - step(limit.ge)
    if isinstance(limit, annotated_types.Gt) and not isinstance(value, str | list):
        return limit.gt
    if isinstance(limit, annotated_types.Le) and not isinstance(value, str | list):
        return limit.le + step(limit.le) if math.isfinite(limit.le) else None
    if isinstance(limit, annotated_types.Lt) and not isinstance(value, str | list):
        return limit.lt
    if isinstance(limit, annotated_types.MaxLen) and isinstance(value, str):
        return "x" * (limit.max_length + 1)
    return None


def _model_in(annotation: Any) -> type[BaseModel] | None:
    """The pydantic model in a field's annotation (itself, or inside Optional or list), if any."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if typing.get_origin(annotation) in (list, typing.Union, types.UnionType):
        return next(filter(None, map(_model_in, typing.get_args(annotation))), None)
    return None


@pytest.mark.parametrize("key", ["\x1e", "a\nb", "\u2028"])
def test_a_key_a_terminal_would_act_on_is_named_escaped_on_one_line(key, files, tmp_path):
    """Found by the long fuzz of best.json: an unknown key '\\x1e' was printed raw, and splitlines() splits there."""
    path, model, fmt = files["best.json"]
    data = json.loads(path.read_text())
    data["evidence"][key] = None
    message = refused(tmp_path / "best.json", model, fmt, data)
    assert len(message.splitlines()) == 1 and f"evidence.{ascii(key)}" in message, message


@pytest.mark.parametrize("name", NAMES)
def test_each_bounded_field_past_its_bound_is_refused_naming_its_key(name, files, tmp_path):
    path, model, fmt = files[name]
    data, copy = json.loads(path.read_text()), tmp_path / name
    found = list(bounds(model, {k: v for k, v in data.items() if k not in STAMP}))
    for at, past in found:
        message = refused(copy, model, fmt, replaced(data, at, past))
        assert f" {dotted(at)}" in message, (at, past, message)
    assert found or name == "run.json", "each of these files has bounded fields"


@SHORT
@given(name=st.sampled_from(NAMES), data=st.data())
def test_random_damage_to_a_file_read_back_is_a_corrupt_file_or_the_file(name, data, files, tmp_path):
    read_damaged(files[name], data, tmp_path / name)


@pytest.mark.slow
@LONG
@given(name=st.sampled_from(NAMES), data=st.data())
def test_long_fuzz_of_the_files_read_back(name, data, files, tmp_path):
    read_damaged(files[name], data, tmp_path / name)


def read_damaged(file: tuple[Path, type[BaseModel], FileFormat], data: st.DataObject, copy: Path) -> None:
    path, model, fmt = file
    copy.write_bytes(data.draw(damaged(path.read_bytes())))
    try:
        read_model(copy, model, fmt=fmt)
    except CorruptFile as error:
        assert str(copy) in str(error)
