"""Opening a sweep's Optuna study storage: the RDB storage at a resolved URL (sweep/files/storage_url.py checks and
fills in the URL), SQLite in write-ahead-log mode.
"""

from __future__ import annotations

from optuna.exceptions import StorageInternalError
from optuna.storages import BaseStorage, RDBStorage
from sqlalchemy import create_engine, event, inspect
from sqlalchemy.exc import SQLAlchemyError

from sweep.files.storage_url import StorageError, shown_url, sqlite_file

SQLITE_BUSY_TIMEOUT_S = 60
"""How long a writer waits for SQLite's lock: the driver and every running trial share the file."""


class StorageUnreadable(StorageError):
    """A storage that cannot be opened: a file that is no database, a server that refuses, a driver missing."""

    def __init__(self, url: str, error: BaseException) -> None:
        if isinstance(error, StorageInternalError) and error.__cause__ is not None:
            error = error.__cause__  # Optuna's wrapper says only that a commit failed; the cause says why
        lines = str(error).strip().splitlines()
        self.reason = f"{type(error).__name__}: {lines[0][:200] if lines else ''}"
        super().__init__(f"{shown_url(url)} cannot be read as an Optuna storage ({self.reason})")


def open_storage(url: str, *, creating: bool = False) -> BaseStorage:
    """Optuna's RDB storage at a resolved URL.

    SQLite runs in write-ahead-log mode, so `sweep status` reads while trials write, and a commit
    needs no fsync (synchronous=NORMAL), which a process killed with -9 cannot undo; only a power
    cut can. The mode is stored in the database file, so only the driver that creates the study
    (`creating`) sets it: a reader must not change the file it reads. Nor does a reader make Optuna's tables: a
    database without them (an empty file, someone else's SQLite file named optuna.db) is refused as it is, where
    Optuna would write its schema into it. (SQLite's read-only mode would refuse every write too, but it leaves a
    write-ahead-logged database's -wal and -shm files behind, which a writer's connection removes.)
    """
    sqlite = sqlite_file(url) is not None
    engine_kwargs = {"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S}} if sqlite else {}
    try:
        # Tables are made only in a database without Optuna's schema: Optuna makes its missing tables before it
        # checks the schema's version, so a database another Optuna version wrote would gain this version's tables
        # before it is refused.
        making_tables = creating and not _has_optuna_schema(url, engine_kwargs)
        storage = RDBStorage(url, engine_kwargs=engine_kwargs, skip_table_creation=not making_tables)
        if creating and sqlite:
            with storage.engine.connect() as connection:
                connection.exec_driver_sql("PRAGMA journal_mode=WAL")
            storage.engine.dispose()  # later connections come through the listener
    except (SQLAlchemyError, StorageInternalError, ImportError) as error:
        raise StorageUnreadable(url, error) from None  # the URL may come from a run.json
    except RuntimeError as error:  # Optuna's schema check: the database was written by another Optuna version
        raise StorageUnreadable(url, error) from None
    if sqlite:
        event.listen(storage.engine, "connect", _sqlite_normal_sync)
    return storage


def _has_optuna_schema(url: str, engine_kwargs: dict) -> bool:
    """Whether the database already holds Optuna's schema (its alembic_version table)."""
    engine = create_engine(url, **engine_kwargs)
    try:
        return inspect(engine).has_table("alembic_version")
    finally:
        engine.dispose()


def _sqlite_normal_sync(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")
