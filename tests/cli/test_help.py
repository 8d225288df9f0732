"""Help that names what a registry defines reads the registry: a target or cluster preset added there shows up here;
what a verb requires is shown so; `sweep --version` says which cpt-sweep this is."""

from importlib.metadata import version

import pytest

from cli import main
from sweep.promote.estimate.clusters import DEFAULT_CLUSTER
from sweep.promote.estimate.clusters import PRESETS as CLUSTERS
from sweep.target.families.registry import PRESETS
from sweep.target.load import TARGET_FORMS


def help_of(argv: list[str], capsys) -> str:
    with pytest.raises(SystemExit):
        main([*argv, "--help"])
    return " ".join(capsys.readouterr().out.split())  # argparse wraps the help over lines


def test_promote_names_every_target_and_cluster_preset(capsys):
    shown = help_of(["promote", "plan"], capsys)
    assert f"a preset ({', '.join(PRESETS)})" in shown
    assert f"a preset ({', '.join(CLUSTERS)}; default {DEFAULT_CLUSTER})" in shown


def test_law_names_every_target_preset_it_can_count_the_tokens_of(capsys):
    """The law counts the run's tokens in the base's pretraining tokens: the presets without them are refused."""
    shown = help_of(["law", "fit"], capsys)
    counted = [name for name, target in PRESETS.items() if target.pretrain_tokens is not None]
    assert "qwen3-32b" in counted and "mistral-7b" not in counted
    assert f"a preset whose pretraining tokens are published ({', '.join(counted)})" in shown


@pytest.mark.parametrize("mode", ["plan", "submit", "rehearse"])
def test_promote_shows_its_target_as_required_with_its_three_forms(mode, capsys):
    shown = help_of(["promote", mode], capsys)
    assert shown.startswith(f"usage: sweep promote {mode} RUN --target {{PRESET | TARGET.yaml | MODEL_DIR}}")
    required = "required (or target: in the --config file): --target TARGET the model the full run trains:"
    assert f"{required} {TARGET_FORMS}" in shown


def test_version_prints_the_installed_version(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out.strip() == f"cpt-sweep {version('cpt-sweep')}"
