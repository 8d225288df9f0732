"""`sweep promote submit / rehearse` through the CLI: exit code 2 for an address it must not use or
where nothing answers, and for launch flags that do not go together; secrets come from the environment."""

from __future__ import annotations

import pytest

from cli import main
from sweep.promote.launch.local_cluster import free_port
from sweep.promote.launch.secrets import redact, secret_env


def test_cli_refuses_a_remote_address_with_exit_2_before_planning(finished_run, capsys):
    run_dir = finished_run()
    code = main(["promote", "submit", str(run_dir), "--target", "llama3.1-8b", "--address", "http://10.1.2.3:8265"])
    err = capsys.readouterr().err
    assert code == 2
    assert "10.1.2.3 is not a loopback address" in err and "--allow-remote" in err
    assert not (run_dir / "promotion").exists()  # refused before anything was planned or written


def test_cli_names_an_address_where_no_jobs_api_answers_with_exit_2(finished_run, capsys, tmp_path):
    address = f"http://127.0.0.1:{free_port()}"
    inputs = ["--tokenizer", "/t", "--base-checkpoint", "/b", "--save-dir", str(tmp_path / "ckpt")]
    for side in ("general", "non_english", "domain"):
        inputs += ["--data-prefix", f"{side}=/data/{side}", "--valid-prefix", f"{side}=/data/valid/{side}"]
    code = main(["promote", "submit", str(finished_run()), "--target", "llama3.1-8b", *inputs, "--address", address])
    assert code == 2
    assert f"--address {address}: no Ray Jobs API answers there" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["promote", "submit", "RUN"], "the following arguments are required: --address"),
        (["promote", "plan", "RUN", "--address", "http://127.0.0.1:8265"], "unrecognized arguments: --address"),
        (["promote", "RUN", "--submit", "--rehearse"], "choose from 'plan', 'submit', 'rehearse'"),
        (["promote", "rehearse", "RUN", "--force"], "unrecognized arguments: --force"),
        (["promote", "plan", "RUN", "--stop-on-forgetting"], "unrecognized arguments: --stop-on-forgetting"),
        (["promote", "submit", "RUN", "--address", "http://127.0.0.1:1", "--overshoot-drill"], "unrecognized"),
    ],
)
def test_cli_refuses_launch_flags_that_do_not_go_together(finished_run, capsys, argv, message):
    run_dir = str(finished_run())
    with pytest.raises(SystemExit) as exited:
        main([run_dir if word == "RUN" else word for word in [*argv, "--target", "llama3.1-8b"]])
    assert exited.value.code == 2 and message in capsys.readouterr().err


def test_secrets_come_from_the_environment_and_are_masked():
    secrets = secret_env({"WANDB_API_KEY": "k-123", "PATH": "/bin", "HF_TOKEN": ""})
    assert secrets == {"WANDB_API_KEY": "k-123"}
    assert redact("key=k-123 twice k-123", secrets) == "key=*** twice ***"
