"""Where a sweep's Optuna study lives, as a URL: a SQLAlchemy URL, checked, filled in from the environment, masked.

A password is written `${NAME}` (in the URL's password or in a `password=` query parameter) and read
from the environment variable NAME each time the study is opened, so it is never written into the
run directory and never printed. `${NAME}` anywhere else is refused: a reference in the host or the
database path would copy an environment variable into a file name or a message. Only text: opening the
storage is the study's (sweep/study/storage.py), so the run directory and every error message can use these.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from urllib.parse import quote_plus

from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError

from train_entry.config import shown

ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
EXAMPLE = "postgresql://optuna:${OPTUNA_DB_PASSWORD}@db.internal/optuna"
PASSWORD_QUERY_KEYS = frozenset({"password", "passwd", "pwd"})
"""Query parameters that carry a password (libpq and MySQL drivers read them as one)."""
MASK = "***"
UNPARSED_PASSWORD = re.compile(
    r"(://[^/?#@:]*:).*(?=@)|([?&](?:" + "|".join(sorted(PASSWORD_QUERY_KEYS)) + r")=)[^&#]*", re.IGNORECASE
)
"""Where a URL that is not one SQLAlchemy parses may hold a password: the user info's, or a password parameter's."""
SQLITE_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite 3 database file (sqlite.org/fileformat.html)."""


class StorageError(ValueError):
    """A storage URL that cannot be used as written; the message says the form to use."""


def check_url(url: str) -> str:
    """`url` when it is a SQLAlchemy URL whose passwords are all `${NAME}` references and that has
    no reference anywhere else; StorageError saying what to write otherwise."""
    parsed = _parsed(url)
    if parsed is None:
        raise StorageError(f"not a SQLAlchemy database URL; e.g. sqlite:////abs/path/optuna.db or {EXAMPLE}")
    for secret in _passwords(parsed):
        if not ENV_REFERENCE.fullmatch(secret):
            raise StorageError(
                "the URL holds a literal password, which would be written into the run directory (spec copy, "
                f"run.json); write it as an environment reference and export it, e.g. {EXAMPLE}"
            )
    if any("${" in part for part in _parts_but_passwords(parsed)):
        raise StorageError(f"${{NAME}} is read from the environment only as a password, e.g. {EXAMPLE}")
    if parsed.drivername.startswith("sqlite") and parsed.database not in (None, "", ":memory:"):
        _check_sqlite_file(Path(parsed.database).expanduser())
    return url


def check_driver(url: str) -> None:
    """The database is one SQLAlchemy knows and its Python driver is installed on this machine (it was an
    ImportError when the study was first opened). Not part of `check_url`: a spec or run record names a storage
    that other machines may open, and this one need not have their driver to validate it."""
    parsed = make_url(url)
    try:
        dialect = parsed.get_dialect()
    except NoSuchModuleError:
        raise StorageError(
            f"{parsed.drivername!r} is not a database SQLAlchemy knows; e.g. sqlite:////abs/path/optuna.db or {EXAMPLE}"
        ) from None
    try:
        dialect.import_dbapi()
    except ImportError as error:
        raise StorageError(
            f"the {parsed.get_backend_name()} driver {dialect.driver!r} is not installed here: no Python module "
            f"{error.name or dialect.driver!r}; install the package that provides it, or name an installed driver "
            f"in the URL ({parsed.get_backend_name()}+DRIVER://...)"
        ) from None


def _check_sqlite_file(path: Path) -> None:
    """A SQLite file that exists must be one: SQLite's own error came as a traceback when the study was opened."""
    if not path.parent.is_dir():
        raise StorageError(f"the SQLite file's folder {path.parent} does not exist; create it or name another file")
    if path.is_dir():
        raise StorageError(f"{path} is a directory; name a SQLite file (it is created if missing)")
    if path.is_file() and path.stat().st_size > 0 and _header(path) != SQLITE_HEADER:
        raise StorageError(f"{path} exists and is not a SQLite database; name a new file or an Optuna study's")


def stored_study_problem(path: Path) -> str | None:
    """Why the SQLite file `path` cannot hold a study a reader opens, read from its bytes before SQLite or Optuna
    touches it (either would write into a file that is none: an empty one got Optuna's whole schema); None when its
    header is SQLite's."""
    if not path.exists():
        return f"{path} is missing"
    if not path.is_file():
        return f"{path} is not a regular file"
    if path.stat().st_size == 0:
        return f"{path} is an empty file, not a SQLite database"
    if _header(path) != SQLITE_HEADER:
        return f"{path} is not a SQLite database (its first bytes are not SQLite's)"
    return None


def _header(path: Path) -> bytes:
    with open(path, "rb") as handle:
        return handle.read(len(SQLITE_HEADER))


def resolve(url: str, *, environ: Mapping[str, str] = os.environ) -> str:
    """`url` with each `${NAME}` password filled in from the environment; StorageError when one is unset."""
    parsed = make_url(check_url(url))
    missing = sorted(
        {name for secret in _passwords(parsed) for name in ENV_REFERENCE.findall(secret) if name not in environ}
    )
    if missing:
        raise StorageError(
            f"the storage URL {shown_url(url)} refers to {', '.join(missing)}, which is not set in the environment; "
            "export it before running (the same for `sweep status`, `report` and `promote` on this run)"
        )

    def fill(secret: str) -> str:
        return ENV_REFERENCE.sub(lambda match: environ[match.group(1)], secret)

    return _with_passwords(parsed, fill).render_as_string(hide_password=False)


def shown_url(url: str) -> str:
    """The URL as it may be printed: every password masked (not a URL: a shortened repr)."""
    parsed = _parsed(url)
    if parsed is None:  # masked as text: a URL SQLAlchemy cannot parse may still hold a password
        return shown(UNPARSED_PASSWORD.sub(lambda match: f"{match.group(1) or match.group(2)}{MASK}", url), 80)
    masked = _with_passwords(parsed, lambda _: MASK).render_as_string(hide_password=False)
    return masked.replace(quote_plus(MASK), MASK)


def quoted(value: object) -> str:
    """A value for an error message: shortened, and with any URL's passwords masked (a bad value may be
    a storage URL that holds one)."""
    if isinstance(value, str) and "://" in value:
        return repr(shown_url(value))
    return shown(value)


def sqlite_file(url: str) -> Path | None:
    """The database file of a SQLite URL; None for another database (or an in-memory one)."""
    parsed = make_url(url)
    if not parsed.drivername.startswith("sqlite") or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def _parsed(url: str) -> URL | None:
    """`url` parsed by SQLAlchemy; None when it is not a URL, a port that is no number included (SQLAlchemy raises a
    bare ValueError for one: a damaged run.json's or jobs.json's URL was a traceback while its error was written)."""
    try:
        return make_url(url)
    except (ArgumentError, ValueError):
        return None


def _passwords(url: URL) -> list[str]:
    query = [
        value
        for key, values in url.query.items()
        if key.lower() in PASSWORD_QUERY_KEYS
        for value in ((values,) if isinstance(values, str) else values)
    ]
    return ([] if url.password is None else [str(url.password)]) + query


def _with_passwords(url: URL, replace: Callable[[str], str]) -> URL:
    query = {
        key: (replace(values) if isinstance(values, str) else tuple(replace(v) for v in values))
        if key.lower() in PASSWORD_QUERY_KEYS
        else values
        for key, values in url.query.items()
    }
    password = None if url.password is None else replace(str(url.password))
    return url.set(password=password, query=query)


def _parts_but_passwords(url: URL) -> list[str]:
    query = [
        f"{key}={value}"
        for key, values in url.query.items()
        if key.lower() not in PASSWORD_QUERY_KEYS
        for value in ((values,) if isinstance(values, str) else values)
    ]
    return [url.drivername, url.username or "", url.host or "", str(url.port or ""), url.database or "", *query]
