"""W&B tracking of proxy trials: offline by default (sync later with `wandb sync`), online when asked."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from sweep.spec import WandbConfig
from train_entry.trial_config import Metrics


@contextlib.contextmanager
def wandb_run(
    config: WandbConfig, *, name: str, group: str | None, trial_config: dict[str, Any], directory: Path
) -> Iterator[Callable[[Metrics], None]]:
    """Yields log(metrics) for one trial's W&B run; a no-op when mode is "disabled"."""
    import wandb

    directory.mkdir(parents=True, exist_ok=True)
    run = wandb.init(
        project=config.project,
        entity=config.entity,
        mode=config.mode,
        name=name,
        group=group,
        config=trial_config,
        dir=str(directory),
        settings=wandb.Settings(silent=True, console="off"),
    )
    try:
        yield lambda metrics: run.log(metrics.model_dump(), step=metrics.step)
    finally:
        run.finish()
