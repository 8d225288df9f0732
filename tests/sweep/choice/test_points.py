"""Points measured more than once, by text: the seed-to-seed spread of each text, never pooled across texts (issue 49:
the printed spread 0.0172 pooled two seeds on the pool with two on a confirmation draw, where seeds on one text
differed by ~0.003)."""

from __future__ import annotations

import pytest
from scripted import trial_row

from sweep.choice.points import point_summaries, seed_noise, seed_noises


def test_the_spread_is_per_text_and_a_draws_offset_never_passes_for_seed_noise():
    rows = [
        trial_row(1, 0.11, "4:1", 0.1970, 0.0064, seed=0),
        trial_row(7, 0.11, "4:1", 0.2000, 0.0076, seed=1, replicate_of=1),  # the pool: seeds 0.003 apart
        trial_row(8, 0.11, "4:1", 0.2300, 0.0050, seed=2, confirms=0),  # draw 1: easier text, 0.03 higher
        trial_row(9, 0.11, "4:1", 0.2330, 0.0052, seed=3, confirms=0),
    ]

    points = point_summaries(rows)
    noises = seed_noises(points)

    assert [(p.text, p.trials) for p in points] == [("pool", [1, 7]), ("draw 1", [8, 9])]
    assert [n.text for n in noises] == ["pool", "draw 1"]
    assert seed_noise(points).domain_gain_sd == pytest.approx(0.003 / 2**0.5)  # the pool's, by default
    assert max(n.domain_gain_sd for n in noises) < 0.003  # pooled over the four, it was 0.019


def test_a_point_is_counted_once_per_seed_on_its_text():
    rows = [trial_row(1, 0.11, "4:1", 0.19, 0.006, seed=0), trial_row(2, 0.11, "4:1", 0.19, 0.006, seed=0)]

    (point,) = point_summaries(rows)

    assert point.trials == [1] and seed_noise([point]) is None
