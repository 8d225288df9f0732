"""The sweep's W&B settings, as the full run's: the full run logs beside the trials it was chosen from.

Read from the spec copy the sweep ran (sweep_data.spec_copy); its `tracking.wandb` is the project, entity and
mode the trials used. The API key is no part of it: it reaches the job's workers from the submitting shell's
environment only (sweep/promote/launch/secrets.py), never the plan.
"""

from __future__ import annotations

from pydantic import ValidationError

from sweep.files.rundir import RunDir
from sweep.promote.errors import PromotionError
from sweep.promote.plan.sweep_data import spec_copy
from sweep.run.tracking import TrackingConfig, WandbConfig
from sweep.spec.spec import spec_copy_content

FULL_RUN_JOB = "full-run"
"""The W&B job type of a full run, beside the trials' `proxy` and the sweep's `sweep`."""


def sweep_wandb(run: RunDir) -> WandbConfig | None:
    """The sweep's W&B settings; None when it tracked nothing (no spec copy, no tracking.wandb, or disabled)."""
    spec = spec_copy(run)
    if spec is None:
        return None
    raw = spec_copy_content(spec)
    try:
        tracking = TrackingConfig.model_validate(raw.get("tracking") or {})
    except ValidationError as error:
        raise PromotionError(f"{spec}: its tracking is not one a sweep writes ({error})") from None
    wandb = tracking.wandb
    return None if wandb is None or wandb.mode == "disabled" else wandb
