import math

import pytest
from optuna.distributions import CategoricalDistribution, FloatDistribution

from sweep.space import Param, SearchSpace
from sweep.study.sampling import GridSamplerConfig
from train_entry.mix import MixRatio


def space(**fields) -> SearchSpace:
    return SearchSpace.model_validate(fields)


def test_default_space_is_log_lr_with_inclusive_bounds_and_categorical_mix():
    s = space(lr_fraction={"low": 0.05, "high": 0.2}, mix=["4:1", "1:1", "1:4"])
    assert s.distributions == {
        "lr_fraction": FloatDistribution(0.05, 0.2, log=True),
        "mix": CategoricalDistribution(["4:1", "1:1", "1:4"]),
    }


def test_mix_range_is_sampled_on_the_log_ratio_and_read_back_as_a_ratio():
    s = space(lr_fraction={"low": 0.05, "high": 0.2, "log": False}, mix={"low": "4:1", "high": "1:4"})
    dist = s.distributions
    assert dist["lr_fraction"] == FloatDistribution(0.05, 0.2, log=False)
    assert dist[Param.MIX_LOG_RATIO.value] == FloatDistribution(-math.log(4), math.log(4))
    point = s.point({"lr_fraction": 0.1, Param.MIX_LOG_RATIO.value: math.log(4)})
    assert point.mix.domain_share == pytest.approx(0.2)
    assert s.point({"lr_fraction": 0.1, Param.MIX_LOG_RATIO.value: 0.0}).mix.domain_share == pytest.approx(0.5)


def test_grid_enumerates_exactly_every_combination_of_listed_values():
    s = space(lr_fraction=[0.05, 0.1, 0.2], mix=["4:1", "1:1"])
    grid = s.grid()
    assert grid == [{"lr_fraction": lr, "mix": mix} for lr in (0.05, 0.1, 0.2) for mix in ("4:1", "1:1")]
    dist = s.distributions
    assert all(p["lr_fraction"] in dist["lr_fraction"].choices and p["mix"] in dist["mix"].choices for p in grid)


def test_a_range_has_no_grid():
    with pytest.raises(ValueError, match="listed values"):
        space(lr_fraction={"low": 0.05, "high": 0.2}, mix=["1:1"]).grid()


@pytest.mark.parametrize(
    ("lr", "mix", "expected"),
    [
        (0.1, "1:1", []),
        (0.05, "1:1", ["lr_fraction=0.05 is at the low end"]),
        (0.198, "1:1", ["lr_fraction=0.198 is at the high end"]),
        (0.1, "1:4", ["domain_share=0.8 is at the high end"]),
        (0.05, "4:1", ["lr_fraction=0.05 is at the low end", "domain_share=0.2 is at the low end"]),
    ],
)
def test_edges_name_each_bound_a_point_sits_on(lr, mix, expected):
    s = space(lr_fraction={"low": 0.05, "high": 0.2}, mix=["4:1", "1:1", "1:4"])
    notes = s.edges(lr, MixRatio.parse(mix), shown_mix=mix)
    assert len(notes) == len(expected)
    for note, start in zip(notes, expected):
        assert note.startswith(start)


def test_a_single_listed_value_has_no_edge():
    s = space(lr_fraction=[0.1], mix=["1:1"])
    assert s.edges(0.1, MixRatio.parse("1:1"), shown_mix="1:1") == []


def test_a_grid_with_another_trial_count_is_rejected():
    grid = space(lr_fraction=[0.1, 0.2], mix=["1:1"])
    with pytest.raises(ValueError, match="every combination"):
        GridSamplerConfig().check_space(grid, num_trials=16)
    GridSamplerConfig().check_space(grid, num_trials=2)


def test_the_edge_note_shows_the_mix_as_listed():
    s = space(lr_fraction={"low": 0.05, "high": 0.2}, mix=["2:1", "1:2"])
    (note,) = s.edges(0.1, MixRatio.parse("2:1"), shown_mix="2:1")
    assert note.endswith("(mix 2:1)")
