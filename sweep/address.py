"""Which Ray cluster addresses the tool connects to, and what it warns about.

Every connection carries something that must not reach a stranger: Ray's client sends the
cluster token with each request (Ray 2.60: RAY_AUTH_MODE=token, the token in RAY_AUTH_TOKEN, the
file RAY_AUTH_TOKEN_PATH names, or ~/.ray/auth_token), `sweep run` hands the W&B key to the
cluster in the job's runtime environment, and anyone who reaches a Jobs API without token
authentication can run any code on it. So an address is refused unless it is local or the user
says --allow-remote, whether it was typed on the command line or read from a file (a run
directory is shared, copied and received from colleagues: its jobs.json may be planted).

Two kinds of address reach Ray. A Jobs API URL (`sweep promote submit`, `sweep jobs`) is the
head's dashboard, http://HOST:8265; it is local when it is a loopback address, where Ray's
dashboard listens by default. A cluster address (`sweep run --address`) is the GCS HOST:6379, a
Ray Client ray://HOST:10001, or `auto`; it is local when it names this machine, because Ray
binds a cluster started here with `ray start --head` to this machine's own interface address.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import SplitResult, urlsplit

if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

SCHEMES = ("http", "https")
ADDRESS_OVERRIDES = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")
"""Environment variables Ray's JobSubmissionClient prefers to the address it is given."""
RAY_CLIENT_SCHEME = "ray"
AUTO = "auto"
"""ray.init's "the cluster of this machine": RAY_ADDRESS when set, else the address `ray start` recorded here."""
MAX_ADDRESS_FILE_BYTES = 1024
"""Ray's address file holds one HOST:PORT; anything longer was not written by `ray start`."""
RAY_ADDRESS_FORMS = "the cluster's GCS address HOST:PORT (port 6379 by default), ray://HOST:PORT (Ray Client) or auto"


class AddressError(ValueError):
    """A cluster address that is malformed, or remote without --allow-remote; the CLI exits with code 2."""


@dataclass(frozen=True, kw_only=True)
class ClusterAddress:
    url: str
    """scheme://host:port of the cluster's Jobs API (its dashboard), without any user:password part."""
    host: str
    loopback: bool
    https: bool


def parse_address(text: str, *, allow_remote: bool, source: str = "--address") -> ClusterAddress:
    """The Jobs API address in `text` ("http://host:8265", "https://...", or "host:port" for http).

    `source` says where the text came from in every error ("--address", or "<file>: address" for
    one read from a file), so that the user knows what to fix.
    """
    raw = text.strip()
    parts = urlsplit(raw if "://" in raw else f"http://{raw}")
    if parts.scheme not in SCHEMES:
        raise AddressError(
            f"{source} {_shown(raw)}: scheme {parts.scheme!r} is not a Jobs API address; give the dashboard's "
            "http://HOST:PORT or https://HOST:PORT (Ray's default port is 8265)"
        )
    host, port = _host_and_port(parts)
    if not host or port is None:
        raise AddressError(f"{source} {_shown(raw)}: expected HOST:PORT, e.g. http://127.0.0.1:8265")
    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        raise AddressError(
            f"{source} {_shown(raw)}: {host} is not a loopback address; the Ray Jobs API runs any code it is sent, "
            "so a remote cluster needs --allow-remote (and token authentication or https)"
        )
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return ClusterAddress(url=f"{parts.scheme}://{netloc}", host=host, loopback=loopback, https=parts.scheme == "https")


def check_ray_address(text: str, *, allow_remote: bool) -> str:
    """The `sweep run --address` value to pass to ray.init, once it is known to be local or allowed.

    `auto` is checked as what Ray resolves it to (RAY_ADDRESS, else the address file of a cluster
    started on this machine) and returned as `auto`, so that ray.init still enables token
    authentication for the local cluster it finds, as it does only for `auto`. Nothing is
    contacted here: a refusal happens before any connection.
    """
    raw = text.strip()
    if raw != AUTO:
        _check_ray_host(raw, source="--address", allow_remote=allow_remote)
        return raw
    resolved, origin = _auto_address()
    _check_ray_host(resolved, source=f"--address auto (resolved from {origin})", allow_remote=allow_remote)
    return AUTO


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def this_machine() -> list[str]:
    """The names of this machine besides loopback: the address Ray gives its nodes here, and the host name.

    Ray's node address is the interface it would route to the internet through (found from the
    routing table, with no packet sent); `ray start --head` records its GCS under it. The host
    name is compared as written, not looked up, so that checking an address makes no DNS query.
    """
    from ray._private.services import get_node_ip_address

    return [_normal(get_node_ip_address()), socket.gethostname().lower()]


def token_auth_configured() -> bool:
    """True when this process would send Ray's auth token: RAY_AUTH_MODE=token and a token to send."""
    if os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        return False
    if os.environ.get("RAY_AUTH_TOKEN"):
        return True
    token_path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    return Path(token_path).is_file() if token_path else (Path.home() / ".ray" / "auth_token").is_file()


def security_warnings(address: ClusterAddress) -> list[str]:
    """What to tell the user before submitting to `address`; empty when nothing is exposed."""
    if address.loopback or address.https or token_auth_configured():
        return []
    warning = (
        f"submitting to {address.url} over plain http without token authentication: anyone who can reach "
        "it can run code on the cluster; set RAY_AUTH_MODE=token with the cluster's token "
        "(RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_PATH or ~/.ray/auth_token), or use an https address"
    )
    return [warning]


def jobs_client(url: str) -> JobSubmissionClient:
    """A Jobs API client for exactly `url`; AddressError when nothing answers there.

    Ray's client would take RAY_ADDRESS or RAY_API_SERVER_ADDRESS over the address it is given,
    which would send the job past the loopback check to wherever the environment points.
    """
    from ray.job_submission import JobSubmissionClient

    hidden = {name: os.environ.pop(name) for name in ADDRESS_OVERRIDES if name in os.environ}
    try:
        return JobSubmissionClient(url)
    except ConnectionError as error:
        raise AddressError(
            f"--address {url}: no Ray Jobs API answers there ({error}); give the head's dashboard address "
            "(port 8265 by default)"
        ) from None
    finally:
        os.environ.update(hidden)


def _check_ray_host(raw: str, *, source: str, allow_remote: bool) -> None:
    """Refuses a cluster address that is malformed, or remote without allow_remote."""
    if raw == "local":
        raise AddressError(f"{source} 'local': leave --address out to start Ray on this machine")
    parts = urlsplit(raw if "://" in raw else f"{RAY_CLIENT_SCHEME}://{raw}")
    if parts.scheme != RAY_CLIENT_SCHEME:
        hint = "; a Jobs API URL is for `sweep promote submit`" if parts.scheme in SCHEMES else ""
        raise AddressError(
            f"{source} {_shown(raw)}: scheme {parts.scheme!r} is not a Ray cluster address{hint}; give {RAY_ADDRESS_FORMS}"
        )
    host, port = _host_and_port(parts)
    if not host or port is None or parts.path or parts.query or parts.fragment:
        raise AddressError(f"{source} {_shown(raw)}: expected {RAY_ADDRESS_FORMS}")
    if parts.username is not None or parts.password is not None:
        raise AddressError(
            f"{source} {_shown(raw)}: a Ray cluster address holds no user:password; Ray authenticates with its "
            "token (RAY_AUTH_MODE=token)"
        )
    if allow_remote or is_loopback(host):
        return
    names = this_machine()
    if _normal(host) not in names:
        raise AddressError(
            f"{source} {_shown(raw)}: {host} is not this machine (loopback, {', '.join(names)}); the W&B key and "
            "Ray's cluster token travel to the cluster, so a remote one needs --allow-remote"
        )


def _auto_address() -> tuple[str, str]:
    """(the address ray.init(address="auto") connects to, where Ray finds it), read as Ray reads it.

    ray.init prefers RAY_ADDRESS to `auto`; without it, Ray reads the file where the last `ray
    start` on this machine wrote its GCS address (under RAY_TMPDIR, TMPDIR or /tmp). Ray's last
    resort, any raylet process it can see, is not followed: a cluster is then named explicitly.
    """
    from_environment = os.environ.get("RAY_ADDRESS", "").strip()
    if from_environment and from_environment != AUTO:
        return from_environment, "RAY_ADDRESS"
    from ray._common.utils import get_ray_address_file

    path = Path(get_ray_address_file(None))
    try:
        if not path.is_file():  # missing, or a FIFO planted in a shared temp folder that would block the read
            raise FileNotFoundError(path)
        with path.open("rb") as file:
            text = file.read(MAX_ADDRESS_FILE_BYTES + 1).decode("utf-8", errors="replace").strip()
    except OSError:
        raise AddressError(
            f"--address auto: no Ray cluster was started on this machine ({path} is missing and RAY_ADDRESS "
            f"unset); start one with `ray start --head`, or give {RAY_ADDRESS_FORMS}"
        ) from None
    if not text or len(text) > MAX_ADDRESS_FILE_BYTES:
        raise AddressError(f"--address auto: {path} does not hold a cluster address; give {RAY_ADDRESS_FORMS}")
    return text, str(path)


def _host_and_port(parts: SplitResult) -> tuple[str | None, int | None]:
    try:
        return parts.hostname, parts.port
    except ValueError:  # a port that is not a number in 0..65535
        return None, None


def _normal(host: str) -> str:
    """One spelling per host: IP addresses compressed (`0:0::1` is `::1`), names lower-cased."""
    try:
        return ipaddress.ip_address(host).compressed
    except ValueError:
        return host.lower()


def _shown(raw: str) -> str:
    """The address as it may be printed: a user:password part is replaced by ***."""
    parts = urlsplit(raw if "://" in raw else f"http://{raw}")
    if parts.username is None and parts.password is None:
        return repr(raw)
    return repr(raw.replace(parts.netloc.rpartition("@")[0], "***"))
