"""The LR schedule as a pure function: warmup, peak, decay to the floor."""

import itertools

import pytest

from train_entry.schedule import lr_at

KW = {"peak_lr": 1e-3, "warmup_steps": 10, "total_steps": 110, "min_lr_ratio": 0.1}


def test_linear_warmup_reaches_peak_at_the_last_warmup_step():
    assert lr_at(0, **KW) == pytest.approx(1e-4)
    assert lr_at(9, **KW) == pytest.approx(1e-3)


@pytest.mark.parametrize("schedule", ["cosine", "linear"])
def test_decay_falls_monotonically_to_the_floor(schedule):
    lrs = [lr_at(step, schedule=schedule, **KW) for step in range(10, 110)]
    assert lrs[0] == pytest.approx(1e-3)
    assert lrs[-1] == pytest.approx(1e-4)
    assert all(a >= b for a, b in itertools.pairwise(lrs))


def test_cosine_is_halfway_at_the_middle_of_decay():
    middle = 10 + (110 - 1 - 10) / 2
    assert lr_at(int(middle), **KW) == pytest.approx(1e-4 + 0.5 * 9e-4, rel=0.02)


def test_constant_holds_peak_after_warmup():
    assert lr_at(100, schedule="constant", **KW) == 1e-3
