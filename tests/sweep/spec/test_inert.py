"""Settings that cannot act: an early-stopping setting the spec's own budget rules out is refused when the spec is
read (exit 2, naming the key and the bound), written or left at its default; one test per setting."""

from __future__ import annotations

import pytest
import yaml

from cli import main
from sweep.files.config_file import SpecError
from sweep.spec.inert import inert_settings
from sweep.spec.spec import load_spec
from tests.conftest import REPO

DEFAULT = REPO / "search_spaces" / "lr_mix.yaml"


def spec_file(tmp_path, *, proxy=None, search=None, drop=()):
    """The default spec with `proxy` and `search` keys replaced (and `drop`: search keys removed), corpus paths
    absolute, written to tmp_path/spec.yaml."""
    raw = yaml.safe_load(DEFAULT.read_text())
    for side in raw["data"].values():
        for split in ("train", "valid"):
            if split in side:
                side[split] = str((DEFAULT.parent / side[split]).resolve())
    raw["proxy"].update(proxy or {})
    raw["search"].update(search or {})
    for key in drop:
        del raw["search"][key]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(raw))
    return path


# proxy.steps 60 at eval_interval 20: the last step a trial can be stopped at is 40.
SHORT = {"steps": 60, "eval_interval": 20, "warmup_steps": 6}


@pytest.mark.parametrize(
    ("proxy", "search", "refused"),
    [
        (SHORT, {}, "search.pruner.n_warmup_steps = 100 is beyond step 40"),
        (SHORT, {"pruner": {"type": "median", "n_warmup_steps": 0}}, "search.forgetting_guard.min_steps = 100"),
        ({}, {"pruner": {"type": "median", "n_startup_trials": 7}}, "n_startup_trials = 7 is not below"),
        ({}, {"pruner": {"type": "wilcoxon", "n_warmup_steps": 150 + 1}}, "n_warmup_steps = 151 is beyond step 150"),
        (
            {"eval_interval": 100},
            {"pruner": {"type": "hyperband", "reduction_factor": 3}},
            "search.pruner hyperband with reduction_factor 3 has no second rung",
        ),
        ({"eval_interval": 200}, {}, "search.pruner can never stop a trial"),
    ],
    ids=["pruner warmup", "guard min_steps", "pruner startup", "wilcoxon warmup", "halving rungs", "one evaluation"],
)
def test_a_written_setting_that_cannot_act_is_refused_naming_it(tmp_path, proxy, search, refused):
    path = spec_file(tmp_path, proxy=proxy, search=search)

    with pytest.raises(SpecError, match=f"^{path}: .*{refused.replace('(', '.').replace(')', '.')}"):
        load_spec(path)


def test_the_shipped_default_spec_has_no_setting_that_cannot_act():
    spec = load_spec(DEFAULT)
    assert inert_settings(spec.search, spec.proxy) == []


def test_a_default_that_cannot_act_is_refused_too(tmp_path):
    # pruner and guard left out: the median pruner's default 4 startup trials meet a sweep of 3 trials
    path = spec_file(tmp_path, proxy=SHORT, search={"num_trials": 3}, drop=("pruner", "forgetting_guard"))

    with pytest.raises(SpecError) as refused:
        load_spec(path)

    assert str(refused.value) == (
        f"{path}: search.pruner.n_startup_trials = 4 is not below search.num_trials = 3: the pruner waits for that "
        "many finished trials and would never act; set it below 3, or search.pruner {type: none}"
    )


def test_sweep_base_refuses_a_spec_whose_pruner_cannot_act_with_exit_2_before_anything_is_written(
    tmp_path, capsys, monkeypatch
):
    path = spec_file(tmp_path, proxy=SHORT)
    monkeypatch.setenv("CPT_SWEEP_CACHE", str(tmp_path / "cache"))

    assert main(["base", str(path)]) == 2

    err = capsys.readouterr().err
    assert "search.pruner.n_warmup_steps = 100 is beyond step 40" in err
    assert "search.forgetting_guard.min_steps = 100 is beyond step 40" in err
    assert not (tmp_path / "cache").exists()
