"""A model in memory scored on local tasks with lm-evaluation-harness (the `eval` extra: `pip install -e '.[eval]'`),
through its public API: `HFLM(pretrained=<model>, tokenizer=...)`, `TaskManager` and `simple_evaluate` with each
task as an inline config (train_entry.downstream.tasks). The process is set offline for the Hugging Face Hub and
datasets first: a task that got past the checks still cannot download."""

from __future__ import annotations

import importlib.util
import os
import time
from typing import TYPE_CHECKING

from train_entry.downstream.scores import DownstreamScores, TaskScore
from train_entry.downstream.tasks import DownstreamPlan

if TYPE_CHECKING:
    import torch

EXTRA = "pip install -e '.[eval]'"
OFFLINE = {"HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}


class HarnessMissing(RuntimeError):
    """lm-evaluation-harness is not installed."""


def require_harness() -> None:
    """HarnessMissing with the line that installs it, when lm-evaluation-harness (or its HF model's accelerate) is
    missing."""
    missing = [name for name in ("lm_eval", "accelerate") if importlib.util.find_spec(name) is None]
    if missing:
        raise HarnessMissing(
            f"evaluation.downstream needs lm-evaluation-harness with its Hugging Face models ({' and '.join(missing)} "
            f"not installed): {EXTRA}"
        )


def score(model: torch.nn.Module, tokenizer_dir: str, plan: DownstreamPlan, *, device: str) -> DownstreamScores:
    """The model's score on each task of the plan (eval mode, no gradients; the model's mode is restored)."""
    require_harness()
    _offline()
    from lm_eval import simple_evaluate
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager
    from transformers import AutoTokenizer

    started = time.perf_counter()
    training = model.training
    model.eval()
    try:
        lm = HFLM(
            pretrained=model,
            tokenizer=AutoTokenizer.from_pretrained(tokenizer_dir),
            device=device,
            batch_size=plan.batch_size,
        )
        results = simple_evaluate(
            model=lm,
            tasks=[dict(task.config) for task in plan.tasks],
            task_manager=TaskManager(include_defaults=False),
            limit=plan.limit,
            log_samples=True,
        )
    finally:
        model.train(training)
    if results is None:  # only on a non-zero rank of a distributed harness run, which this never starts
        raise RuntimeError("lm-evaluation-harness returned no results")
    scores = {task.name: _task_score(results, task.name, task.metric) for task in plan.tasks}
    return DownstreamScores(tasks=scores, seconds=time.perf_counter() - started)


def _offline() -> None:
    """The Hugging Face Hub and datasets set offline in this process: through the environment for what is imported
    after, and through their config modules, which read it once when imported (transformers imported the Hub's
    before a trial trains)."""
    os.environ.update(OFFLINE)
    import datasets.config
    import huggingface_hub.constants

    huggingface_hub.constants.HF_HUB_OFFLINE = True
    datasets.config.HF_HUB_OFFLINE = datasets.config.HF_DATASETS_OFFLINE = True


def _task_score(results: dict, name: str, metric: str) -> TaskScore:
    """The metric's score, standard error and per-example values (lm-evaluation-harness keys them `metric,filter`;
    a multiple-choice task's filter is `none`)."""
    reported = results["results"][name]
    key = next(key for key in reported if key.split(",")[0] == metric)
    stderr = reported.get(key.replace(metric, f"{metric}_stderr", 1))
    samples = sorted(results["samples"][name], key=lambda sample: sample["doc_id"])
    return TaskScore(
        metric=metric,
        score=float(reported[key]),
        stderr=float(stderr) if isinstance(stderr, (int, float)) else None,
        examples=[float(sample[metric]) for sample in samples],
    )
