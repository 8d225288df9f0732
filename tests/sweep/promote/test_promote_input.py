"""Names and numbers a promotion request gives are bounded where they are read: a target or cluster longer than any
path, and token counts whose sum overflows, are exit 2 in one line before anything is planned (issue 52: a
100,000-character target name was an OSError, and two --data-prefix ...@1e308 of one side a pydantic traceback from
the blend's weights)."""

from __future__ import annotations

import pytest

from cli import main
from tests.hostile import tree
from tests.sweep.promote.promote_runs import write_run

LONG_NAME = "x" * 100_000


def refused(argv: list[str], capsys) -> str:
    capsys.readouterr()
    with pytest.raises(SystemExit) as raised:  # argparse's own refusal: usage, then one error line
        main(argv)
    assert raised.value.code == 2
    return capsys.readouterr().err.strip().splitlines()[-1]


@pytest.mark.parametrize("flag", ["--target", "--cluster"])
def test_a_name_longer_than_any_path_is_refused_at_once(flag, tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    before = tree(tmp_path)
    target = [] if flag == "--target" else ["--target", "llama3.1-8b"]
    line = refused(["promote", "plan", str(run_dir), *target, flag, LONG_NAME], capsys)
    kind = flag.removeprefix("--")
    assert f"argument {flag}: {kind} 'xxx" in line and "(100,002 characters) is 100,000 characters" in line
    assert len(line) < 400 and tree(tmp_path) == before


def test_a_name_longer_than_any_path_in_a_promotion_file_names_the_key(tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    config = tmp_path / "promotion.yaml"
    config.write_text(f"target: {LONG_NAME}\n")
    assert main(["promote", "plan", str(run_dir), "--config", str(config)]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert line.startswith(f"error: {config}: target = 'xxx") and "is 100,000 characters" in line and len(line) < 800


def test_law_fit_refuses_a_target_name_longer_than_any_path(tmp_path, capsys):
    from tests.sweep.law.test_law_cli import EXAMPLE

    assert main(["law", "fit", str(EXAMPLE), "--target", LONG_NAME, "--refits", "0"]) == 2
    (line,) = capsys.readouterr().err.strip().splitlines()
    assert "is 100,000 characters: not a preset's name nor a path" in line and len(line) < 400


def test_token_counts_that_would_overflow_the_blend_are_refused_on_the_command_line(tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    prefixes = ["--data-prefix", "general=/data/a@1e308", "--data-prefix", "general=/data/b@1e308"]
    line = refused(["promote", "plan", str(run_dir), "--target", "llama3.1-8b", *prefixes], capsys)
    assert line.endswith("TOKENS must be a positive number of at most 1e+15, got 'general=/data/a@1e308'")


def test_token_counts_that_would_overflow_the_blend_are_refused_in_a_promotion_file(tmp_path, capsys):
    run_dir = write_run(tmp_path / "runs" / "lr_mix")
    config = tmp_path / "promotion.yaml"
    sides = "\n".join(f"  - {{prefix: /data/{name}, tokens: 1.0e+308}}" for name in "ab")
    config.write_text(f"data:\n  general:\n{sides}\n")
    before = tree(tmp_path)
    assert main(["promote", "plan", str(run_dir), "--target", "llama3.1-8b", "--config", str(config)]) == 2
    error = capsys.readouterr().err
    assert "Traceback" not in error and "data.general.0.tokens = 1e+308: Input should be less than or equal to" in error
    assert tree(tmp_path) == before
