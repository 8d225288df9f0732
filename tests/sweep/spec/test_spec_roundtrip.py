"""Every config round-trips: a spec that validates still validates, equal, after it is dumped and loaded
again (as the spec copy in the run directory and the plan stored in the study are); and no generated
spec makes the loader fail any other way than with a SpecError."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sweep.files.config_file import SpecError
from sweep.spec.spec import SweepSpec, load_spec
from sweep.study.study import SweepPlan, load_study, open_study
from tests.conftest import SHIPPED_SPECS, TINY_SPEC

SHIPPED = SHIPPED_SPECS
PROFILE = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def round_trips(spec: SweepSpec, folder: Path) -> None:
    """JSON, a YAML file on disk, and the plan the study stores all load back equal."""
    assert SweepSpec.model_validate_json(spec.model_dump_json()) == spec
    copy = folder / "copy.yaml"
    copy.write_text(yaml.safe_dump(spec.model_dump(mode="json", exclude_none=True), sort_keys=False))
    assert load_spec(copy) == spec
    plan = spec.plan()
    assert SweepPlan.model_validate(plan.model_dump(mode="json")) == plan


@pytest.mark.parametrize("path", SHIPPED, ids=[p.name for p in SHIPPED])
def test_every_shipped_spec_round_trips(path, tmp_path):
    round_trips(load_spec(path), tmp_path)


def test_a_grid_without_num_trials_is_stored_with_its_own_count_and_reloads(write_tiny_spec, tmp_path):
    """The bug this guards: the stored plan carried the default 16 and every trial's reload refused it."""
    path = write_tiny_spec(
        "grid25.yaml",
        space={"lr_fraction": [0.05, 0.08, 0.1, 0.15, 0.2], "mix": ["4:1", "2:1", "1:1", "1:2", "1:4"]},
        search={"sampler": "grid"},
    )
    raw = yaml.safe_load(path.read_text())
    del raw["search"]["num_trials"]
    path.write_text(yaml.safe_dump(raw))
    spec = load_spec(path)
    assert spec.search.num_trials == 25
    url = f"sqlite:///{tmp_path / 'optuna.db'}"
    open_study(spec.plan(), url=url, name="grid25")
    assert load_study(url=url, name="grid25").plan.planned_trials == 25 + spec.search.replicates.trials
    round_trips(spec, tmp_path)


fractions = st.floats(min_value=0.001, max_value=1.0, allow_nan=False)
ratios = st.tuples(st.integers(1, 9), st.integers(1, 9)).map(lambda pair: f"{pair[0]}:{pair[1]}")


@st.composite
def spaces_and_searches(draw) -> tuple[dict[str, Any], dict[str, Any]]:
    """Space and search sections users write, grids of every size, ranges, every pruner; some invalid on purpose."""
    sampler = draw(st.sampled_from(["tpe", "gp", "nsga2", "random", "grid"]))
    search: dict[str, Any] = {"sampler": sampler, "seed": draw(st.integers(0, 2**32 - 1))}
    if sampler == "grid":
        space = {
            "lr_fraction": draw(st.lists(fractions, min_size=1, max_size=6)),
            "mix": draw(st.lists(ratios, min_size=1, max_size=5)),
        }
        if draw(st.booleans()):
            search["num_trials"] = draw(st.integers(1, 40))
    else:
        low, high = sorted(draw(st.lists(fractions, min_size=2, max_size=2)))
        mix = st.one_of(
            st.lists(ratios, min_size=1, max_size=5),
            st.tuples(ratios, ratios).map(lambda pair: {"low": pair[0], "high": pair[1]}),
        )
        space = {"lr_fraction": {"low": low, "high": high, "log": draw(st.booleans())}, "mix": draw(mix)}
        search["num_trials"] = draw(st.integers(1, 200))
    kind = draw(st.sampled_from(["median", "percentile", "successive_halving", "hyperband", "wilcoxon", "none"]))
    search["pruner"] = {"type": kind, **draw(st.sampled_from([{}, {"n_warmup_steps": 50}, {"reduction_factor": 2}]))}
    return space, search


@PROFILE
@given(sections=spaces_and_searches(), concurrency=st.integers(1, 8))
def test_generated_specs_either_round_trip_or_are_one_spec_error(
    sections, concurrency, write_tiny_spec, tmp_path_factory
):
    space, search = sections
    path = write_tiny_spec("generated.yaml")
    raw = yaml.safe_load(path.read_text())
    raw.update(space=space, search=search, execution={"concurrency": concurrency})  # exactly what was drawn
    path.write_text(yaml.safe_dump(raw))
    try:
        spec = load_spec(path)
    except SpecError as exc:
        assert str(path) in str(exc)
        return
    if search["sampler"] == "grid":
        assert spec.search.num_trials == len(space["lr_fraction"]) * len(space["mix"])
    round_trips(spec, tmp_path_factory.mktemp("copy"))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=30),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=20,
)


@PROFILE
@given(section=st.sampled_from(list(TINY_SPEC)), key=st.text(min_size=1, max_size=12), value=json_values)
def test_any_value_anywhere_is_accepted_or_one_spec_error(section, key, value, write_tiny_spec):
    path = write_tiny_spec("fuzzed.yaml")
    raw = yaml.safe_load(path.read_text())
    raw[section] = {**(raw.get(section) or {}), key: value}
    path.write_text(yaml.safe_dump(raw))
    try:
        load_spec(path)
    except SpecError as exc:
        assert str(path) in str(exc) and len(str(exc)) < 5000
