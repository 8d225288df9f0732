"""The sweep's Optuna study in RDB storage: the durable record every other part reads and writes.

The driver creates it (or loads it on a rerun) and asks it for points; each trial opens the same
study in its own process to report evaluations, ask the pruner and tell its outcome. Both open
it through `open_study`, so they share one sampler (with the forgetting constraint) and one
pruner, built from the spec.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import optuna
from optuna.storages import BaseStorage
from optuna.trial import FrozenTrial
from pydantic import Field, ValidationError
from sqlalchemy.exc import SQLAlchemyError

from sweep.files.compat import STUDY_PLAN, FormatError
from sweep.files.config_file import SpecError
from sweep.files.storage_url import shown_url
from sweep.space import SearchSpace
from sweep.study.config import PickConfig, SearchConfig
from sweep.study.pruning import GuardedPruner
from sweep.study.record import Attr
from sweep.study.sampling import make_sampler
from sweep.study.storage import StorageUnreadable, open_storage
from train_entry.config import StrictConfig, shown
from train_entry.trial_config import ProxyConfig

PLAN_ATTR = "plan"
"""The study user attr holding the SweepPlan, with its format version (sweep/files/compat.py)."""
PICK_ATTR = "pick"
"""The study user attr naming the pick once the sweep has decided (what optuna-dashboard shows under the study): its
verdict, point and trials. Optuna's own `best_trial` is the best observed trial, the feasible trial with the
highest domain_gain at its one seed, not the pick; optuna-dashboard's "best trial" ignores the budget."""
SWEEP_ID_ATTR = "sweep_id"
"""The study user attr holding a random id made with the study: a rerun of the same sweep finds it
again, and a --fresh sweep under the same name gets a new one (it names the sweep's W&B run)."""


class SweepPlan(StrictConfig):
    """What a sweep was asked for (what and how, not where), stored with its study so that readers
    need only the storage."""

    forgetting_budget: float
    max_lr: float
    """The base's own peak LR: a trial's peak LR is lr_fraction x max_lr."""
    proxy: ProxyConfig
    """Every trial's budget; the pruner's steps are its optimizer steps."""
    space: SearchSpace
    search: SearchConfig
    pick: PickConfig
    """How the recommended point is picked from the finished trials. Not part of what makes a study another
    sweep: changing it re-reads the same trials."""
    downstream_budget: dict[str, float] = Field(default_factory=dict)
    """Per downstream task, the largest drop from the base's score accepted (objective.downstream_budget); empty:
    none. Like pick, it re-reads the same trials."""

    @property
    def planned_trials(self) -> int:
        """How many trials the sweep ends with at least: num_trials (for a grid, every point: the spec fills it in),
        the replicates that follow them and the first point's confirmation trials (a point confirmed over the
        budget adds `confirmation.seeds` more for the next, see most_trials)."""
        return self.search.num_trials + self.search.replicates.trials + self.search.confirmation.seeds

    @property
    def most_trials(self) -> int:
        """How many trials the sweep ends with at most: every confirmation round run."""
        confirmation = self.search.confirmation
        return self.planned_trials + (confirmation.candidates - 1) * confirmation.seeds

    @property
    def first_confirmation_seed(self) -> int:
        """The main trials train at proxy.seed, the replicates at most at the replicates.trials seeds after it
        (fewer points than replicates.top take more seeds each); confirmation after those."""
        return self.proxy.seed + self.search.replicates.trials + 1

    @property
    def full_trial_tokens(self) -> int:
        """Tokens one trial reads when it runs the whole proxy budget."""
        return self.proxy.steps * self.proxy.batch_size * self.proxy.seq_len


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


class StudyNotFound(LookupError):
    """The storage holds no sweep of that name (or one this cpt-sweep cannot read); says which."""


def load_study(*, url: str, name: str) -> SweepStudy:
    """An existing sweep's study, with the sampler and pruner its stored plan names.

    This is how a trial's process and `sweep status` open it: the storage and the study name
    are all they need. The stored plan is validated like a spec: storage is shared, so it is
    input like any other.
    """
    try:
        storage = open_storage(url)
        study_id = storage.get_study_id_from_name(name)
        stored = storage.get_study_user_attrs(study_id).get(PLAN_ATTR)
    except KeyError:
        raise StudyNotFound(f"it holds no study named {name!r}") from None
    except SQLAlchemyError as exc:
        raise StudyNotFound(f"it cannot be read as an Optuna storage ({type(exc).__name__})") from None
    except StorageUnreadable as exc:
        raise StudyNotFound(f"it cannot be read as an Optuna storage ({exc.reason})") from None
    if stored is None:
        raise StudyNotFound(f"study {name!r} has no sweep plan: it was not made by `sweep run`")
    try:
        plan = SweepPlan.model_validate(STUDY_PLAN.unstamped(f"the sweep plan stored with study {name!r}", stored))
    except FormatError as exc:
        raise StudyNotFound(str(exc)) from None
    except (ValidationError, SpecError) as exc:
        raise StudyNotFound(
            f"the sweep plan stored with study {name!r} is not one this cpt-sweep wrote: {exc.errors()[0]['msg']}"
        ) from None
    study = optuna.load_study(study_name=name, storage=storage, **_optimizers(plan))
    return SweepStudy(study, storage, plan)


def _optimizers(plan: SweepPlan, *, trials_before: int = 0) -> dict[str, Any]:
    """The sampler and pruner of the plan; the sampler's seed moves on with the trials already stored
    (see sweep.study.sampling), so a driver resuming a study never draws its first points again."""
    search = plan.search
    pruner = GuardedPruner(
        search.pruner, guard=search.forgetting_guard, budget=plan.forgetting_budget, proxy=plan.proxy
    )
    sampler = make_sampler(search.sampler, seed=search.seed, num_trials=search.num_trials, trials_before=trials_before)
    return {"sampler": sampler, "pruner": pruner}


def _stored_trials(storage: BaseStorage, name: str) -> int:
    try:
        return storage.get_n_trials(storage.get_study_id_from_name(name))
    except KeyError:
        return 0  # a new study


class StudyMismatch(ValueError):
    """The stored study was made for another plan: resuming it would mix two sweeps."""


def _stored_plan(stored: Any) -> SweepPlan | None:
    try:
        return SweepPlan.model_validate(STUDY_PLAN.unstamped("the stored sweep plan", stored))
    except (ValidationError, SpecError, FormatError, TypeError):
        return None  # a plan this cpt-sweep cannot read: not this sweep's


def _same_sweep(stored: SweepPlan | None, plan: SweepPlan) -> bool:
    """The stored plan is this one but for the pick rule and the downstream budget, which re-read the same trials
    another way."""
    return stored is not None and stored.model_copy(update={key: getattr(plan, key) for key in REREAD}) == plan


REREAD = ("pick", "downstream_budget")
"""The plan's keys a resumed sweep may change: they choose among the same trials."""
SPEC_KEY_OF = {"forgetting_budget": "objective.forgetting_budget", "max_lr": "base.max_lr"}
"""The plan's keys that sit elsewhere in a spec; the others (proxy, space, search) keep their names."""
MAX_CHANGES_SHOWN = 5


def _what_changed(stored: SweepPlan | None, plan: SweepPlan) -> str:
    """The spec keys whose values differ from the stored plan's, each with both values."""
    if stored is None:
        return "its stored plan is not one this cpt-sweep reads"
    before = _flat(stored.model_dump(mode="json", exclude=set(REREAD)))
    after = _flat(plan.model_dump(mode="json", exclude=set(REREAD)))
    changed = [
        f"{key}: {shown(before.get(key, '(unset)'), 40)} then, {shown(after.get(key, '(unset)'), 40)} now"
        for key in sorted(before.keys() | after.keys())
        if before.get(key) != after.get(key)
    ]
    more = f", and {len(changed) - MAX_CHANGES_SHOWN} more" if len(changed) > MAX_CHANGES_SHOWN else ""
    return "; ".join(changed[:MAX_CHANGES_SHOWN]) + more


def _flat(tree: Any, prefix: str = "") -> dict[str, Any]:
    """{"search.pruner.type": "median", ...}; lists are values (a changed mix list is one change)."""
    if not isinstance(tree, dict):
        return {prefix: tree}
    flat: dict[str, Any] = {}
    for key, value in tree.items():
        flat.update(_flat(value, f"{prefix}.{key}" if prefix else SPEC_KEY_OF.get(key, key)))
    return flat


def open_study(plan: SweepPlan, *, url: str, name: str) -> SweepStudy:
    """Creates the sweep's study (enqueueing the points its sampler runs first: a grid's), or loads it on a rerun."""
    storage = open_storage(url, creating=True)
    study = optuna.create_study(
        storage=storage,
        study_name=name,
        direction="maximize",  # domain_gain; forgetting is the constraint
        load_if_exists=True,
        **_optimizers(plan, trials_before=_stored_trials(storage, name)),
    )
    sweep = SweepStudy(study, storage, plan)
    stored = study.user_attrs.get(PLAN_ATTR)  # absent: a new study
    if stored is not None and not _same_sweep(_stored_plan(stored), plan):
        raise StudyMismatch(
            f"study {name!r} in {shown_url(url)} was created by a different search, objective or proxy "
            f"({_what_changed(_stored_plan(stored), plan)}); rerun with --fresh to start over, or --name for a new "
            f"sweep"
        )
    sweep.study.set_user_attr(PLAN_ATTR, STUDY_PLAN.stamped(plan.model_dump(mode="json")))
    if SWEEP_ID_ATTR not in study.user_attrs:
        sweep.study.set_user_attr(SWEEP_ID_ATTR, uuid.uuid4().hex[:8])
    # Enqueued points are WAITING trials in storage, so they survive a crash; on a rerun skip_if_exists
    # enqueues only the points a crash kept from being enqueued (or that have not run yet).
    for params in plan.search.sampler.points(plan.space):
        sweep.study.enqueue_trial(params, user_attrs={Attr.POINT.value: params}, skip_if_exists=True)
    return sweep
