"""A predicted forgetting trajectory for the watch's tests: a straight line from the base to the run's end."""

from __future__ import annotations

from train_entry.fullrun.watch import PredictedPoint, PredictedTrajectory


def straight(tokens: float, *, end: float, upper_start: float, upper_end: float, source: str = "test"):
    """Forgetting from 0 to `end` over `tokens`, its upper bound from `upper_start` to `upper_end`."""
    return PredictedTrajectory(
        source=source,
        level=0.9,
        points=[
            PredictedPoint(tokens=0, forgetting=0.0, forgetting_upper=upper_start),
            PredictedPoint(tokens=tokens, forgetting=end, forgetting_upper=upper_end),
        ],
    )
