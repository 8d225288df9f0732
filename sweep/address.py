"""Which Ray cluster addresses a submission may use, and what it warns about.

Anyone who reaches a Ray cluster's Jobs API without token authentication can run any code on
it. So only loopback addresses are accepted unless the user says --allow-remote, and a remote
address then gets a warning unless it is https or Ray's token authentication is configured
(Ray 2.60: RAY_AUTH_MODE=token, with the token in RAY_AUTH_TOKEN, the file RAY_AUTH_TOKEN_PATH
names, or ~/.ray/auth_token; the client then sends it with every request).
"""

from __future__ import annotations

import ipaddress
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit


if TYPE_CHECKING:
    from ray.job_submission import JobSubmissionClient

SCHEMES = ("http", "https")
ADDRESS_OVERRIDES = ("RAY_API_SERVER_ADDRESS", "RAY_ADDRESS")
"""Environment variables Ray's JobSubmissionClient prefers to the address it is given."""


class AddressError(ValueError):
    """A cluster address that is malformed, or remote without --allow-remote; the CLI exits with code 2."""


@dataclass(frozen=True, kw_only=True)
class ClusterAddress:
    url: str
    """scheme://host:port of the cluster's Jobs API (its dashboard), without any user:password part."""
    host: str
    loopback: bool
    https: bool


def parse_address(text: str, *, allow_remote: bool) -> ClusterAddress:
    """The Jobs API address in `text` ("http://host:8265", "https://...", or "host:port" for http)."""
    raw = text.strip()
    parts = urlsplit(raw if "://" in raw else f"http://{raw}")
    if parts.scheme not in SCHEMES:
        raise AddressError(
            f"--address {_shown(raw)}: scheme {parts.scheme!r} is not a Jobs API address; give the dashboard's "
            "http://HOST:PORT or https://HOST:PORT (Ray's default port is 8265)"
        )
    try:
        host, port = parts.hostname, parts.port
    except ValueError:
        host, port = None, None
    if not host or port is None:
        raise AddressError(f"--address {_shown(raw)}: expected HOST:PORT, e.g. http://127.0.0.1:8265")
    loopback = is_loopback(host)
    if not loopback and not allow_remote:
        raise AddressError(
            f"--address {_shown(raw)}: {host} is not a loopback address; the Ray Jobs API runs any code it is sent, "
            "so a remote cluster needs --allow-remote (and token authentication or https)"
        )
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return ClusterAddress(url=f"{parts.scheme}://{netloc}", host=host, loopback=loopback, https=parts.scheme == "https")


def is_loopback(host: str) -> bool:
    """127.0.0.0/8, ::1 and localhost."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


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


def _shown(raw: str) -> str:
    """The address as it may be printed: a user:password part is replaced by ***."""
    parts = urlsplit(raw if "://" in raw else f"http://{raw}")
    if parts.username is None and parts.password is None:
        return repr(raw)
    return repr(raw.replace(parts.netloc.rpartition("@")[0], "***"))
