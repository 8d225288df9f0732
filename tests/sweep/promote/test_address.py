"""Which cluster addresses a submission accepts, what it warns about, and the CLI's exit code 2 for the rest."""

from __future__ import annotations

import pytest

from sweep.cli import main
from sweep.promote.address import AddressError, parse_address, security_warnings
from sweep.promote.local_cluster import free_port
from sweep.promote.secrets import redact, secret_env


@pytest.mark.parametrize(
    ("text", "url"),
    [
        ("http://127.0.0.1:8265", "http://127.0.0.1:8265"),
        ("127.0.0.1:8265", "http://127.0.0.1:8265"),
        ("http://127.3.4.5:8265", "http://127.3.4.5:8265"),
        ("http://localhost:8265", "http://localhost:8265"),
        ("http://[::1]:8265", "http://[::1]:8265"),
    ],
)
def test_loopback_addresses_are_accepted_without_allow_remote(text, url):
    address = parse_address(text, allow_remote=False)
    assert (address.url, address.loopback) == (url, True)
    assert security_warnings(address) == []


@pytest.mark.parametrize("text", ["http://10.0.0.5:8265", "head.cluster.internal:8265", "https://[2001:db8::1]:443"])
def test_a_non_loopback_address_is_refused_without_allow_remote(text):
    with pytest.raises(AddressError, match="--allow-remote"):
        parse_address(text, allow_remote=False)


def test_a_remote_address_over_plain_http_without_token_auth_warns(monkeypatch):
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    address = parse_address("http://10.0.0.5:8265", allow_remote=True)
    [warning] = security_warnings(address)
    assert "http://10.0.0.5:8265" in warning and "RAY_AUTH_MODE=token" in warning


def test_https_or_token_auth_silences_the_warning(monkeypatch, tmp_path):
    monkeypatch.delenv("RAY_AUTH_MODE", raising=False)
    assert security_warnings(parse_address("https://head.example:8443", allow_remote=True)) == []
    token = tmp_path / "token"
    token.write_text("t0k3n")
    monkeypatch.setenv("RAY_AUTH_MODE", "token")
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(token))
    assert security_warnings(parse_address("http://10.0.0.5:8265", allow_remote=True)) == []
    monkeypatch.setenv("RAY_AUTH_TOKEN_PATH", str(tmp_path / "missing"))  # token mode but no token to send
    assert security_warnings(parse_address("http://10.0.0.5:8265", allow_remote=True)) != []


@pytest.mark.parametrize("text", ["ray://127.0.0.1:10001", "127.0.0.1", "http://127.0.0.1:notaport", "http://:8265"])
def test_malformed_addresses_name_what_is_expected(text):
    with pytest.raises(AddressError, match="--address"):
        parse_address(text, allow_remote=True)


def test_a_password_in_the_address_is_never_shown():
    with pytest.raises(AddressError) as error:
        parse_address("http://admin:hunter2@10.0.0.5:8265", allow_remote=False)
    assert "hunter2" not in str(error.value)
    assert "hunter2" not in parse_address("http://admin:hunter2@10.0.0.5:8265", allow_remote=True).url


def test_cli_refuses_a_remote_address_with_exit_2_before_planning(finished_run, capsys):
    run_dir = finished_run()
    code = main(["promote", str(run_dir), "--target", "llama3.1-8b", "--submit", "--address", "http://10.1.2.3:8265"])
    err = capsys.readouterr().err
    assert code == 2
    assert "10.1.2.3 is not a loopback address" in err and "--allow-remote" in err
    assert not (run_dir / "promotion").exists()  # refused before anything was planned or written


def test_cli_names_an_address_where_no_jobs_api_answers_with_exit_2(finished_run, capsys, tmp_path):
    address = f"http://127.0.0.1:{free_port()}"
    inputs = ["--tokenizer", "/t", "--base-checkpoint", "/b", "--save-dir", str(tmp_path / "ckpt")]
    for side in ("general", "non_english", "domain"):
        inputs += ["--data-prefix", f"{side}=/data/{side}"]
    code = main(["promote", str(finished_run()), "--target", "llama3.1-8b", *inputs, "--submit", "--address", address])
    assert code == 2
    assert f"--address {address}: no Ray Jobs API answers there" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--submit"], "--submit needs --address"),
        (["--address", "http://127.0.0.1:8265"], "add --submit"),
        (["--submit", "--rehearse", "--address", "http://127.0.0.1:8265"], "separate steps"),
        (["--rehearse", "--dry-run"], "--dry-run plans only"),
    ],
)
def test_cli_refuses_launch_flags_that_do_not_go_together(finished_run, capsys, flags, message):
    assert main(["promote", str(finished_run()), "--target", "llama3.1-8b", *flags]) == 2
    assert message in capsys.readouterr().err


def test_secrets_come_from_the_environment_and_are_masked():
    secrets = secret_env({"WANDB_API_KEY": "k-123", "PATH": "/bin", "HF_TOKEN": ""})
    assert secrets == {"WANDB_API_KEY": "k-123"}
    assert redact("key=k-123 twice k-123", secrets) == "key=*** twice ***"
