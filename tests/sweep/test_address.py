"""Which cluster addresses the tool may contact: Jobs API URLs (submission, `sweep jobs`) and Ray cluster
addresses (`sweep run --address`); local ones pass, remote ones need allow_remote, and no refusal
connects anywhere or shows a password."""

from __future__ import annotations

import os

import pytest
import ray
from ray._private.services import get_node_ip_address
from ray._private.utils import write_ray_address

from sweep.address import AddressError, check_ray_address, parse_address, security_warnings
from tests.hostile import no_connections

REMOTE_GCS = "203.0.113.7:6379"
"""TEST-NET-3 (RFC 5737): an address that is nobody's machine, and certainly not this one."""


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


def test_an_address_read_from_a_file_is_refused_naming_the_file():
    with pytest.raises(AddressError) as error:
        parse_address("http://10.0.0.5:8265", allow_remote=False, source="runs/x/promotion/p/jobs.json: address")
    assert str(error.value).startswith("runs/x/promotion/p/jobs.json: address 'http://10.0.0.5:8265': 10.0.0.5 is")


# ---------------------------------------------------------------- `sweep run --address`: Ray cluster addresses


@pytest.fixture
def no_local_cluster(monkeypatch, tmp_path):
    """No RAY_ADDRESS, and Ray's address file (of the last `ray start` here) under tmp_path/ray, not yet written."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    (tmp_path / "ray").mkdir()
    return tmp_path / "ray" / "ray_current_cluster"


@pytest.mark.parametrize(
    "text", ["127.0.0.1:6379", "localhost:6379", "[::1]:6379", "ray://127.0.0.1:10001", " 127.0.0.1:6379 "]
)
def test_a_loopback_cluster_address_is_accepted_as_given(text):
    assert check_ray_address(text, allow_remote=False) == text.strip()


def test_this_machines_own_address_is_local():
    """`ray start --head` records its GCS under the address Ray gives its node here, not 127.0.0.1."""
    node = get_node_ip_address()
    assert check_ray_address(f"{node}:6379", allow_remote=False) == f"{node}:6379"
    assert check_ray_address(f"ray://{node}:10001", allow_remote=False) == f"ray://{node}:10001"


@pytest.mark.parametrize("text", [REMOTE_GCS, "ray://head.cluster.internal:10001", "[2001:db8::1]:6379"])
def test_a_remote_cluster_address_needs_allow_remote_and_nothing_is_contacted(text):
    with no_connections() as tried, pytest.raises(AddressError) as error:
        check_ray_address(text, allow_remote=False)
    message = str(error.value)
    assert message.startswith(f"--address {text!r}: ") and "is not this machine" in message
    assert "--allow-remote" in message and "\n" not in message
    assert tried == [] and not ray.is_initialized()
    assert check_ray_address(text, allow_remote=True) == text


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("http://127.0.0.1:8265", "a Jobs API URL is for `sweep promote submit`"),
        ("https://head:8443", "a Jobs API URL is for `sweep promote submit`"),
        ("127.0.0.1", "expected the cluster's GCS address HOST:PORT"),
        ("ray://127.0.0.1:notaport", "expected the cluster's GCS address HOST:PORT"),
        ("127.0.0.1:6379/path", "expected the cluster's GCS address HOST:PORT"),
        ("", "expected the cluster's GCS address HOST:PORT"),
        ("local", "leave --address out"),
    ],
)
def test_a_malformed_cluster_address_says_what_is_expected(text, expected):
    with pytest.raises(AddressError, match="--address") as error:
        check_ray_address(text, allow_remote=True)
    assert expected in str(error.value)


def test_auto_is_the_cluster_started_on_this_machine(no_local_cluster):
    write_ray_address(f"{get_node_ip_address()}:6379")  # as `ray start --head` does
    assert check_ray_address("auto", allow_remote=False) == "auto"


def test_auto_resolving_to_a_remote_cluster_needs_allow_remote(no_local_cluster):
    write_ray_address(REMOTE_GCS)  # e.g. this machine is a worker node of a remote head
    with no_connections() as tried, pytest.raises(AddressError) as error:
        check_ray_address("auto", allow_remote=False)
    assert str(error.value).startswith(f"--address auto (resolved from {no_local_cluster}) {REMOTE_GCS!r}: ")
    assert tried == []
    assert check_ray_address("auto", allow_remote=True) == "auto"


def test_auto_is_what_ray_address_says_when_it_is_set(no_local_cluster, monkeypatch):
    write_ray_address("127.0.0.1:6379")
    monkeypatch.setenv("RAY_ADDRESS", REMOTE_GCS)  # ray.init(address="auto") prefers it to the address file
    with pytest.raises(AddressError, match=r"^--address auto \(resolved from RAY_ADDRESS\) '203\.0\.113\.7:6379'"):
        check_ray_address("auto", allow_remote=False)
    monkeypatch.setenv("RAY_ADDRESS", "http://127.0.0.1:8265")  # set for `ray job submit`, not a cluster address
    with pytest.raises(AddressError, match="a Jobs API URL is for `sweep promote submit`"):
        check_ray_address("auto", allow_remote=False)


def test_auto_without_a_cluster_on_this_machine_says_how_to_start_one(no_local_cluster):
    with pytest.raises(AddressError, match="no Ray cluster was started on this machine .* `ray start --head`"):
        check_ray_address("auto", allow_remote=False)
    os.mkfifo(no_local_cluster)  # planted in a shared temp folder: reading it would wait forever
    with pytest.raises(AddressError, match="no Ray cluster was started on this machine"):
        check_ray_address("auto", allow_remote=False)
    no_local_cluster.unlink()
    no_local_cluster.write_text("9" * 5000)
    with pytest.raises(AddressError, match="does not hold a cluster address"):
        check_ray_address("auto", allow_remote=False)


@pytest.mark.parametrize(
    "text",
    [
        "ray://admin:hunter2@203.0.113.7:10001",
        "admin:hunter2@127.0.0.1:6379",
        "http://admin:hunter2@127.0.0.1:8265",
        "ray://admin:hunter2@127.0.0.1:notaport",
    ],
)
@pytest.mark.parametrize("allow_remote", [False, True])
def test_a_password_in_a_cluster_address_is_never_shown(text, allow_remote):
    with pytest.raises(AddressError) as error:
        check_ray_address(text, allow_remote=allow_remote)
    assert "hunter2" not in str(error.value) and "***" in str(error.value)


def test_a_password_in_ray_address_is_never_shown_either(no_local_cluster, monkeypatch):
    monkeypatch.setenv("RAY_ADDRESS", "ray://admin:hunter2@203.0.113.7:10001")
    with pytest.raises(AddressError) as error:
        check_ray_address("auto", allow_remote=True)
    assert "hunter2" not in str(error.value)


@pytest.mark.slow
def test_the_address_of_a_cluster_ray_starts_here_is_local():
    """The GCS address Ray itself gives a cluster it starts on this machine passes without --allow-remote."""
    ray.init(address="local", num_cpus=1, include_dashboard=False, configure_logging=False, log_to_driver=False)
    try:
        gcs = ray.get_runtime_context().gcs_address
    finally:
        ray.shutdown()
    assert check_ray_address(gcs, allow_remote=False) == gcs
