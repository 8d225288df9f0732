"""W&B tracking: each trial attempt is a W&B run (the sweep-level run is sweep/run/sweep_log.py).

The driver decides the mode once (`resolve_wandb`) and hands the resulting `WandbTarget` to every
trial, so a trial on another Ray node logs the same way whatever its own environment says. The
API key never goes into a file: it reaches trials through the Ray job's runtime environment
(`worker_env`), and W&B's run config holds trial parameters only.
"""

from __future__ import annotations

import functools
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self

from pydantic import Field

from train_entry.config import StrictConfig
from train_entry.data.draws import text_name
from sweep.study.row import TrialRow
from train_entry.downstream.scores import DOWNSTREAM_COLUMNS
from train_entry.trial_config import Metrics, TrialConfig

if TYPE_CHECKING:  # wandb is imported only when tracking is on
    from wandb.sdk.wandb_run import Run


class WandbConfig(StrictConfig):
    """Weights & Biases: each trial a W&B run (job_type proxy, grouped by sweep), one run per sweep."""

    mode: Literal["online", "offline", "disabled"] = "online"
    """online logs live when an API key is configured (WANDB_API_KEY or `wandb login`) and falls
    back to offline, with a notice, when none is; offline writes runs under the run directory for
    `wandb sync`; the WANDB_MODE environment variable overrides this."""
    project: str = Field("cpt-sweep", min_length=1, max_length=128)
    entity: str | None = Field(None, min_length=1, max_length=128)
    """W&B user or team; default: the API key's own default entity."""


class TrackingConfig(StrictConfig):
    wandb: WandbConfig | None = None
    """Absent: no W&B at all (nothing imported, nothing written)."""


TRIAL_JOB = "proxy"
SWEEP_JOB = "sweep"
RUN_ID_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")
"""Characters kept out of a W&B run id (it becomes part of URLs and file names)."""
STEP_METRIC = "tokens_seen"
"""The x-axis of every logged metric: trials of different mixes and batch shapes compare by tokens read."""
HISTORY_KEYS = tuple(Metrics.model_fields)
"""Logged at every evaluation (on the pool's interim windows); their last values are also the run's summary."""
FINAL = "final"
"""Summary key of the trial's figures as trials.csv has them (FINAL_KEYS): a trial's final figures on its whole
validation text (sweep.study.table), which differ from its last interim evaluation's. Under a key of their own: W&B
ends a run's summary with each logged metric's last value, over any value set for that key after it."""
FINAL_KEYS = ("text", "domain_gain", "forgetting", "domain_loss", "general_loss")
DOWNSTREAM_SECONDS = "downstream_seconds"
"""Summary key (under FINAL) of a trial's downstream evaluation's seconds, beside its scores."""
STATUS = "status"
REASON = "reason"
WITHIN_BUDGET = "within_budget"
"""Config key of a trial run that ran to the end: its final forgetting within the sweep's budget."""
PICK_TAG = "pick"
"""Tag of the pick's trial runs, added once the sweep has decided (online only: sweep/run/sweep_log.py)."""
"""Summary keys every trial run ends with (COMPLETED / PRUNED / DIVERGED / FAILED, and why)."""
CREDENTIAL_ENV = ("WANDB_API_KEY", "WANDB_BASE_URL")
"""What an online trial on another node needs from the driver's environment."""

_log = logging.getLogger(__name__)

_ENV_MODES = {"online": "online", "run": "online", "offline": "offline", "dryrun": "offline", "disabled": "disabled"}


class TrackingError(ValueError):
    """A W&B setting that cannot be used (e.g. an unknown WANDB_MODE); the message names it."""


@dataclass(frozen=True)
class WandbTarget:
    """Where a sweep's W&B runs go: the spec's project, with the mode decided once by the driver."""

    mode: Literal["online", "offline"]
    project: str
    entity: str | None


def resolve_wandb(
    config: WandbConfig | None, *, environ: Mapping[str, str] = os.environ
) -> tuple[WandbTarget | None, str | None]:
    """The target (None: no W&B) and a notice for the user when the spec's mode was not honoured.

    `tracking.wandb` absent or WANDB_MODE=disabled: off. WANDB_MODE otherwise overrides the spec's
    mode. Online without an API key (WANDB_API_KEY, or `wandb login`'s netrc entry) falls back to
    offline rather than failing a sweep that may run for hours.
    """
    if config is None:
        return None, None
    env_mode = environ.get("WANDB_MODE")
    # Set but empty is refused too: W&B itself would fail on it inside every trial.
    if env_mode is not None and env_mode.strip().lower() not in _ENV_MODES:
        raise TrackingError(f"WANDB_MODE={env_mode!r} is not a W&B mode; valid: {', '.join(_ENV_MODES)} (or unset it)")
    env_mode = env_mode.strip().lower() if env_mode is not None else None
    mode = _ENV_MODES[env_mode] if env_mode else config.mode
    if mode == "disabled":
        return None, None
    notice = None
    if mode == "online" and api_key(environ) is None:
        mode = "offline"
        source = "WANDB_MODE=online" if env_mode else "tracking.wandb.mode is online"
        notice = (
            f"W&B: {source} but no API key is configured (WANDB_API_KEY or `wandb login`); "
            "logging offline under the run directory instead (upload later with `wandb sync`)"
        )
    return WandbTarget(mode=mode, project=config.project, entity=config.entity), notice


def api_key(environ: Mapping[str, str] = os.environ) -> str | None:
    """The key W&B itself would use: WANDB_API_KEY, else the netrc entry `wandb login` wrote for the host."""
    if environ.get("WANDB_API_KEY"):
        return environ["WANDB_API_KEY"]
    from wandb.sdk.lib import urls, wbauth

    return wbauth.read_netrc_auth(host=environ.get("WANDB_BASE_URL") or urls.DEFAULT_BASE_URL)


def worker_env(target: WandbTarget | None, *, environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """Environment variables for the Ray job's runtime_env: the credentials, only when logging online.

    A key from the driver's netrc (`wandb login`) travels as WANDB_API_KEY, so trials on nodes
    where nobody logged in still log online.
    """
    if target is None or target.mode != "online":
        return {}
    env = {name: environ[name] for name in CREDENTIAL_ENV if environ.get(name)}
    key = api_key(environ)
    return {**env, "WANDB_API_KEY": key} if key else env


def wandb_trial_config(
    config: TrialConfig, *, base_model: str, sweep: str | None, number: int | None, role: str | None = None
) -> dict[str, Any]:
    """A trial's W&B config: its point, its role in the sweep (search, replicate, confirmation), its proxy budget and
    its base; no paths, no credentials. Whether it ended within the budget is added when it ends (TrialRun.end)."""
    identity = {"sweep": sweep, "number": number, "role": role} if sweep is not None else {}
    return {
        **identity,
        "lr_fraction": config.lr_fraction,
        "peak_lr": config.peak_lr,
        "mix": str(config.mix),
        "domain_share": config.mix.domain_share,
        "non_english_share": config.non_english_share,
        "proxy": config.proxy.model_dump(mode="json"),
        "base": {
            "model": base_model,
            "max_lr": config.max_lr,
            **config.base_losses.model_dump(include={"domain_loss", "general_loss"}),
        },
        "valid_draw": config.valid_draw,
        "text": text_name(config.valid_draw),
        "threads": config.threads,
        "seed": config.seed,
    }


def trial_run_name(sweep: str, number: int) -> str:
    """A trial's W&B run name: the sweep's and its number, so the sweep run's summary names the pick's runs."""
    return f"{sweep}-{number:04d}"


class TrialRun:
    """One trial attempt's W&B run, as a context manager; does nothing when the target is None.

    `start()` opens the run once the attempt's directory is fresh (an attempt starts by emptying
    it); `end()` writes the status and reason the trial was recorded with. Leaving on an exception
    ends the run FAILED with that exception, so a retried attempt's run says why it stopped.
    """

    def __init__(
        self, target: WandbTarget | None, *, name: str, group: str | None, config: dict[str, Any], directory: Path
    ) -> None:
        self._target = target
        self._name = name
        self._group = group
        self._config = config
        self._directory = directory
        self._run: Run | None = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        if exc is not None and self._run is not None:
            self._close(status="FAILED", reason=f"{type(exc).__name__}: {exc}", exit_code=1)
        elif self._run is not None:
            self._close(status=None, reason=None, exit_code=0)

    def start(self) -> None:
        if self._target is None:
            return
        if self._run is not None:  # a run left open by an earlier call on this object
            self._close(status=None, reason=None, exit_code=0)
        role = self._config.get("role")
        self._run = start_wandb_run(
            self._target,
            name=self._name,
            group=self._group,
            job_type=TRIAL_JOB,
            config=self._config,
            directory=self._directory,
            tags=[role] if role else None,
        )
        self._run.define_metric(STEP_METRIC)
        self._run.define_metric("*", step_metric=STEP_METRIC)

    def log(self, metrics: Metrics) -> None:
        if self._run is not None:
            self._run.log(metrics.model_dump(), step=metrics.step)

    def end(
        self,
        *,
        status: str,
        reason: str | None,
        within_budget: bool | None = None,
        figures: Mapping[str, Any] | None = None,
    ) -> None:
        """Ends the run with its status and reason, and `figures` (the study's row of the trial, FINAL_KEYS) in its
        summary under FINAL as trials.csv has them; `within_budget` (a completed trial's final forgetting against the budget)
        goes into its config, beside its role, so W&B's run table filters on both."""
        if self._run is not None:
            if within_budget is not None:
                self._run.config.update({WITHIN_BUDGET: within_budget}, allow_val_change=True)
            if figures is not None:
                self._run.summary.update({FINAL: dict(figures)})
            self._close(status=status, reason=reason, exit_code=0)

    def _close(self, *, status: str | None, reason: str | None, exit_code: int) -> None:
        run, self._run = self._run, None
        if status is not None:
            run.summary.update({STATUS: status, REASON: reason})
        run.finish(exit_code=exit_code)


def downstream_figures(row: TrialRow) -> dict[str, float | None]:
    """A trial's downstream scores as its W&B summary keeps them under FINAL, named as trials.csv's columns
    (`<task>_score`, `<task>_drop`, ...), and its evaluation's seconds."""
    if not row.downstream:
        return {}
    figures: dict[str, float | None] = {DOWNSTREAM_SECONDS: row.downstream_seconds}
    for task, scores in row.downstream.items():
        figures |= {f"{task}_{column}": getattr(scores, field) for column, field in DOWNSTREAM_COLUMNS.items()}
    return figures


def start_wandb_run(
    target: WandbTarget,
    *,
    name: str,
    group: str | None,
    job_type: str,
    config: dict[str, Any],
    directory: Path,
    run_id: str | None = None,
    tags: list[str] | None = None,
) -> Run:
    """A W&B run whose files go under `directory`/wandb/ (with the trial or sweep they belong to);
    with `run_id`, the run of that id is resumed when it exists.

    Online, a W&B server that cannot be reached or refuses the key gives an offline run instead
    (with a warning): tracking never fails a trial, and `wandb sync` uploads the run later.
    """
    import wandb

    directory.mkdir(parents=True, exist_ok=True)
    init = functools.partial(
        wandb.init,
        project=target.project,
        entity=target.entity,
        name=name,
        group=group,
        job_type=job_type,
        config=config,
        dir=str(directory),
        id=run_id,
        tags=tags,
        resume="allow" if run_id else None,
        # Terminal output stays with the trial's own log; our console shows the sweep.
        settings=wandb.Settings(silent=True, console="off"),
    )
    try:
        return init(mode=target.mode)
    except wandb.errors.CommError as exc:
        if target.mode != "online":
            raise
        _log.warning("W&B online failed for %s (%s); logging it offline under %s/wandb instead", name, exc, directory)
        if run_id is not None:
            wandb.teardown()  # W&B's service process still holds the failed attempt's run id
        return init(mode="offline")
