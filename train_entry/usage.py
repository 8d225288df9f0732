"""Measures what a trial used of its device, kept in its result (TrialUsage): the seconds its training steps took and
the most memory its GPU's allocator held. With the model's FLOPs per token and the card's peak they give the trial's
MFU (benchmarks/gpu_sweep.py); the peaks say how many trials one GPU holds side by side."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import torch

from train_entry.trial_config import TrialUsage

GB = 1e9
Args = ParamSpec("Args")
Value = TypeVar("Value")


class UsageMeter:
    """Measures a trial's TrialUsage from its creation: calls of the functions `aside` wraps are not training time."""

    def __init__(self, device: torch.device) -> None:
        self._device = device
        if device.type == "cuda":
            # A Ray actor runs trial after trial: the peak is this trial's from here, the model it loaded included.
            torch.cuda.reset_peak_memory_stats(device)
        self._aside = 0.0
        self._started = time.perf_counter()

    def aside(self, function: Callable[Args, Value]) -> Callable[Args, Value]:
        """`function`, its calls' time counted out of the training time."""

        def timed(*args: Args.args, **kwargs: Args.kwargs) -> Value:
            began = time.perf_counter()
            try:
                return function(*args, **kwargs)
            finally:
                self._aside += time.perf_counter() - began

        return timed

    def usage(self, *, steps: int, tokens_seen: int, first_step: int) -> TrialUsage:
        """The usage of a run that took steps `first_step` to `steps`, having read `tokens_seen` by then."""
        peak = torch.cuda.max_memory_reserved(self._device) / GB if self._device.type == "cuda" else None
        tokens = tokens_seen // steps * (steps - first_step) if steps else 0
        seconds = time.perf_counter() - self._started - self._aside
        return TrialUsage(train_seconds=seconds, train_tokens=tokens, peak_memory_gb=peak, eval_seconds=self._aside)
