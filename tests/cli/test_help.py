"""Help that names what a registry defines reads the registry: a target preset added there shows up here."""

from cli import main
from sweep.promote.targets import PRESETS


def test_promote_names_every_target_preset(capsys):
    try:
        main(["promote", "plan", "--help"])
    except SystemExit:
        pass
    shown = " ".join(capsys.readouterr().out.split())  # argparse wraps the help over lines
    assert f"a preset ({', '.join(PRESETS)})" in shown
