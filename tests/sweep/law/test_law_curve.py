"""The size curve of the form that bends (sweep.law.curve): a Gaussian process in log N with a linear trend through
each size's level. It passes through the levels, is the straight line (a power law) where they lie on one and has
no uncertainty then, and where they bend it follows them and its sd grows with the distance beyond them."""

from __future__ import annotations

import numpy as np
import pytest
from pydantic import ValidationError

from sweep.law.curve import SizeCurve

SIZES = [5.0, 5.5, 6.0, 6.5]


def test_levels_on_a_line_extrapolate_as_a_power_law_with_no_bend():
    curve = SizeCurve(sizes=SIZES, levels=[0.0, -0.1, -0.2, -0.3])
    mean, sd = curve.posterior(np.array([5.0, 6.5, 8.5]))
    assert mean == pytest.approx([0.0, -0.3, -0.7], abs=1e-6)
    assert np.all(sd < 1e-6)


def test_bent_levels_are_followed_and_their_uncertainty_grows_beyond_them():
    curve = SizeCurve(sizes=SIZES, levels=[0.0, -0.27, -0.63, -0.84])
    mean, sd = curve.posterior(np.array(SIZES))
    assert mean == pytest.approx(curve.levels, abs=1e-3)  # through every level
    assert np.all(sd < 0.01)
    _, beyond = curve.posterior(np.array([7.0, 7.5, 8.5]))
    assert 0.01 < beyond[0] < beyond[1] < beyond[2]


def test_a_draw_moves_the_curve_by_its_sd_and_two_sizes_draw_a_line():
    curve = SizeCurve(sizes=SIZES, levels=[0.0, -0.27, -0.63, -0.84])
    mean, sd = curve.posterior(np.array(8.0))
    assert curve.model_copy(update={"draw": 1.5}).level(1e8) == pytest.approx(mean + 1.5 * sd)
    line = SizeCurve(sizes=[5.0, 6.0], levels=[0.0, -0.2], draw=2.0)
    assert line.level(1e8) == pytest.approx(-0.6)  # nothing bends through two sizes, whatever the draw


@pytest.mark.parametrize(
    ("sizes", "levels", "message"),
    [
        ([5.0, 6.0], [0.0], "one level per size"),
        ([6.0, 5.0], [0.0, 0.1], "ascend"),
        ([5.0, 6.0], [0.0, 11.0], "within"),
        ([5.0, float("nan")], [0.0, 0.1], "finite"),
    ],
)
def test_a_curve_that_no_fit_could_give_is_refused(sizes, levels, message):
    with pytest.raises(ValidationError, match=message):
        SizeCurve(sizes=sizes, levels=levels)


def test_what_the_levels_own_errors_make_of_a_line_is_measured_by_drawing_them():
    """Levels on a line plus independent errors: the sd of the curve's mean change to two decades out, and the
    amplitude's 90 % bound, are those of 4,000 such draws."""
    errors = [0.01, 0.02, 0.02, 0.03]
    line = [-0.46 * (size - SIZES[0]) for size in SIZES]
    change, spread = SizeCurve(sizes=SIZES, levels=line).noise(SIZES[0], 8.5, errors, 0.9)
    rng = np.random.default_rng(0)
    changes, sds = [], []
    for _ in range(4000):
        levels = np.array(line) + rng.normal(0.0, errors)
        mean, sd = SizeCurve(sizes=SIZES, levels=list(levels - levels[0])).posterior(np.array([SIZES[0], 8.5]))
        changes.append(mean[1] - mean[0] - (-0.46 * (8.5 - SIZES[0])))
        sds.append(sd[1])
    assert np.std(changes) == pytest.approx(change, rel=0.05)
    assert np.mean(np.array(sds) ** 2 <= spread**2) == pytest.approx(0.9, abs=0.05)  # Satterthwaite: 0.88
