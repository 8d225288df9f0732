"""The sweep's Optuna study in RDB storage: the durable record every other part reads and writes.

The driver creates it (or loads it on a rerun) and asks it for points; each trial opens the same
study in its own process to report evaluations, ask the pruner and tell its outcome. Both open
it through `open_study`, so they share one sampler (with the forgetting constraint) and one
pruner, built from the spec.
"""

from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import optuna
from optuna.storages import BaseStorage, RDBStorage
from optuna.trial import FrozenTrial
from sqlalchemy import event
from sqlalchemy.engine import make_url

from sweep.pruning import make_pruner
from sweep.record import Attr
from sweep.sampling import make_sampler
from sweep.space import SearchSpace
from sweep.spec import ENV_REFERENCE, SearchConfig, SpecError, SweepSpec
from train_entry.config import StrictConfig
from train_entry.trial_config import ProxyConfig

STUDY_DB = "optuna.db"
"""The default SQLite file in the run directory."""

PLAN_ATTR = "plan"
"""The study user attr holding the SweepPlan."""
SWEEP_ID_ATTR = "sweep_id"
"""The study user attr holding a random id made with the study: a rerun of the same sweep finds it
again, and a --fresh sweep under the same name gets a new one (it names the sweep's W&B run)."""

SQLITE_BUSY_TIMEOUT_S = 60
"""How long a writer waits for SQLite's lock: the driver and every running trial share the file."""


def storage_url(storage: str | None, run_dir: Path) -> str:
    """The spec's storage URL with its `${NAME}` references filled in from the environment, or by
    default a SQLite file in the run directory."""
    if storage is None:
        return f"sqlite:///{(run_dir / STUDY_DB).resolve()}"
    missing = sorted({name for name in ENV_REFERENCE.findall(storage) if name not in os.environ})
    if missing:
        raise SpecError(
            f"search.storage {storage!r} refers to {', '.join(missing)}, which is not set in the environment; "
            "export it before running (the same for `sweep status`, `report` and `promote` on this run)"
        )
    return ENV_REFERENCE.sub(lambda match: os.environ[match.group(1)], storage)


def planned_trials(search: SearchConfig) -> int:
    """How many trials the sweep ends with: every grid point, or `num_trials`."""
    if search.method == "grid":
        return len(SearchSpace.from_config(search).grid())
    return search.num_trials


class SweepPlan(StrictConfig):
    """What a sweep was asked for, stored with its study so that readers need only the storage."""

    planned_trials: int
    forgetting_budget: float
    max_lr: float
    """The base's own peak LR: a trial's peak LR is lr_fraction x max_lr."""
    proxy: ProxyConfig
    """Every trial's budget; the pruner's steps are its optimizer steps."""
    search: SearchConfig

    @classmethod
    def from_spec(cls, spec: SweepSpec) -> SweepPlan:
        return cls(
            planned_trials=planned_trials(spec.search),
            forgetting_budget=spec.objective.forgetting_budget,
            max_lr=spec.base.max_lr,
            proxy=spec.proxy,
            search=spec.search,
        )

    @property
    def full_trial_tokens(self) -> int:
        """Tokens one trial reads when it runs the whole proxy budget."""
        return self.proxy.steps * self.proxy.batch_size * self.proxy.seq_len

    @property
    def space(self) -> SearchSpace:
        return SearchSpace.from_config(self.search)


@dataclass(frozen=True)
class SweepStudy:
    """An Optuna study together with its storage, so that any process can address a trial by number."""

    study: optuna.Study
    storage: BaseStorage
    plan: SweepPlan

    def trial(self, number: int) -> optuna.Trial:
        """A live handle on a trial created elsewhere (the driver asks, the trial reports)."""
        study_id = self.storage.get_study_id_from_name(self.study.study_name)
        return optuna.Trial(self.study, self.storage.get_trial_id_from_study_id_trial_number(study_id, number))

    def ask(self) -> optuna.Trial:
        """A new trial at the sampler's next point (or the next enqueued grid point)."""
        trial = self.study.ask()
        self.plan.space.suggest(trial)
        return trial

    def params(self, number: int) -> dict[str, Any]:
        """A RUNNING trial's params, choosing now any that a killed driver's ask left unchosen."""
        return self.plan.space.suggest(self.trial(number))

    def frozen(self, number: int) -> FrozenTrial:
        study_id = self.storage.get_study_id_from_name(self.study.study_name)
        return self.storage.get_trial(self.storage.get_trial_id_from_study_id_trial_number(study_id, number))

    def trials(self) -> list[FrozenTrial]:
        return self.study.get_trials(deepcopy=False)

    @property
    def sweep_id(self) -> str:
        return self.study.user_attrs[SWEEP_ID_ATTR]


def load_study(*, url: str, name: str) -> SweepStudy:
    """An existing sweep's study, with the sampler and pruner its stored plan names.

    This is how a trial's process and `sweep status` open it: the storage and the study name
    are all they need.
    """
    storage = open_storage(url)
    plan = SweepPlan.model_validate(storage.get_study_user_attrs(storage.get_study_id_from_name(name))[PLAN_ATTR])
    study = optuna.load_study(study_name=name, storage=storage, **_optimizers(plan))
    return SweepStudy(study, storage, plan)


def _optimizers(plan: SweepPlan) -> dict[str, Any]:
    return {"sampler": make_sampler(plan.search), "pruner": make_pruner(plan.search.pruner, proxy=plan.proxy)}


class StudyMismatch(RuntimeError):
    """The stored study was made for another plan: resuming it would mix two sweeps."""


def shown_url(url: str) -> str:
    """The storage URL with any password masked, for messages and logs."""
    return make_url(url).render_as_string(hide_password=True)


def open_storage(url: str) -> BaseStorage:
    if not url.startswith("sqlite"):
        return RDBStorage(url)
    storage = RDBStorage(url, engine_kwargs={"connect_args": {"timeout": SQLITE_BUSY_TIMEOUT_S}})
    # Write-ahead logging: `sweep status` reads while trials write, and a commit needs no fsync
    # (synchronous=NORMAL), which a process killed with -9 cannot undo; only a power cut can.
    with storage.engine.connect() as connection:
        connection.exec_driver_sql("PRAGMA journal_mode=WAL")
    event.listen(storage.engine, "connect", _sqlite_normal_sync)
    storage.engine.dispose()  # later connections come through the listener
    return storage


def _sqlite_normal_sync(dbapi_connection, _record) -> None:
    dbapi_connection.execute("PRAGMA synchronous=NORMAL")


def open_study(spec: SweepSpec, *, url: str, name: str) -> SweepStudy:
    """Creates the sweep's study (enqueueing the grid for method grid), or loads it on a rerun."""
    storage = open_storage(url)
    plan = SweepPlan.from_spec(spec)
    study = optuna.create_study(
        storage=storage,
        study_name=name,
        direction="maximize",  # domain_gain; forgetting is the constraint
        load_if_exists=True,
        **_optimizers(plan),
    )
    sweep = SweepStudy(study, storage, plan)
    stored = study.user_attrs.get(PLAN_ATTR)  # absent: a new study
    if stored is not None and SweepPlan.model_validate(stored) != plan:
        raise StudyMismatch(
            f"study {name!r} in {shown_url(url)} was created by a different search, objective or proxy; "
            f"rerun with --fresh to start over, or --name for a new sweep"
        )
    sweep.study.set_user_attr(PLAN_ATTR, plan.model_dump(mode="json"))
    if SWEEP_ID_ATTR not in study.user_attrs:
        sweep.study.set_user_attr(SWEEP_ID_ATTR, uuid.uuid4().hex[:8])
    if spec.search.method == "grid":
        # Enqueued points are WAITING trials in storage, so the grid survives a crash; on a rerun
        # skip_if_exists enqueues only the points a crash kept from being enqueued.
        for params in plan.space.grid():
            sweep.study.enqueue_trial(params, user_attrs={Attr.POINT.value: params}, skip_if_exists=True)
    return sweep
