"""Which cluster addresses a submission accepts and what it warns about."""

from __future__ import annotations

import pytest

from sweep.address import AddressError, parse_address, security_warnings


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
