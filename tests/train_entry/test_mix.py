"""Mix ratios: ratio_of, the mix a log ratio is written as, sits beside MixRatio, below the pick and the law."""

import math

import pytest

from train_entry.mix import MixRatio, ratio_of


@pytest.mark.parametrize(
    ("log_ratio", "written"),
    [(0.0, "1:1"), (math.log(4.0), "4:1"), (-math.log(1.5), "1:1.5"), (math.log(2.345), "2.35:1")],
)
def test_a_log_ratio_is_written_with_its_smaller_side_one_and_three_digits(log_ratio, written):
    assert str(ratio_of(log_ratio)) == written


def test_the_ratio_written_is_exactly_the_ratio_returned():
    """The point promoted is the point shown: the mix read back from its text is the same mix."""
    mix = ratio_of(-0.8123)
    assert MixRatio.parse(str(mix)) == mix == MixRatio(1.0, 2.25)
