"""What the pick rests on: notes for best.json's `boundary_warnings` when the pick sits on an edge of the searched
box, at a mix no trial ran to the end, or far from every completed trial, where the surrogate's figures are its
own extrapolation rather than the trials'.

The surrogate predicts everywhere in the box with intervals that stay narrow between few trials when its length
scales are long; a reader of its plot cannot tell a point the trials pin down from one they never came near.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from sweep.choice.pick import Pick
from sweep.choice.surrogate import completed
from sweep.space import Box, MixRange, SearchSpace
from sweep.study.row import TrialRow
from train_entry.mix import MixRatio

UNTRIED_DISTANCE = 0.2
"""In units of the searched box (each axis 0 to 1): a point farther than this from every completed trial is one the
trials did not come near. Below the surrogate's shortest length scale (0.25, sweep/choice/surrogate.py), so a
region the fit can only extrapolate into is never called supported."""


def untried_mixes(space: SearchSpace, rows: Sequence[TrialRow]) -> list[str]:
    """The listed mixes no trial ran to the end at (empty for a mix range, which untried_distance judges)."""
    if isinstance(space.mix, MixRange):
        return []
    tried = {round(row.domain_share, 9) for row in completed(rows)}
    return [str(mix) for mix in space.mix if round(mix.domain_share, 9) not in tried]


def nearest_trial_distance(
    space: SearchSpace, rows: Sequence[TrialRow], lr: np.ndarray, share: np.ndarray
) -> np.ndarray:
    """For each point (lr[i], share[i]), its distance to the nearest completed trial in units of the searched box."""
    used = completed(rows)
    box = Box.of(space)
    if not used:
        return np.full(len(lr), np.inf)
    points = box.scaled(lr, share)
    trials = box.scaled([row.lr_fraction for row in used], [row.domain_share for row in used])
    return np.min(np.linalg.norm(points[:, None, :] - trials[None, :, :], axis=-1), axis=1)


def pick_warnings(pick: Pick, space: SearchSpace, rows: Sequence[TrialRow]) -> list[str]:
    """Notes on what the pick's figures rest on; empty when it is inside the box, at a tried mix, near trials."""
    point = pick.point
    if point is None:
        return []
    notes = [
        f"the pick sits on the edge of the search: {note}"
        for note in space.edges(point.lr_fraction, MixRatio.from_domain_share(point.domain_share), shown_mix=point.mix)
    ]
    untried = untried_mixes(space, rows)
    if point.mix in untried:
        notes.append(
            f"the pick's mix {point.mix} has no trial run to the end: its figures are the surrogate's, carried over "
            "from the mixes the trials ran"
        )
    elif untried:
        notes.append(
            f"no trial ran to the end at mix {', '.join(untried)}: the surrogate's figures there are its extrapolation "
            "(hatched grey on the surrogate plot)"
        )
    distance = float(
        nearest_trial_distance(space, rows, np.array([point.lr_fraction]), np.array([point.domain_share]))[0]
    )
    if point.mix not in untried and distance > UNTRIED_DISTANCE:
        notes.append(
            f"the pick is {distance:.2f} of the searched box from the nearest completed trial (beyond "
            f"{UNTRIED_DISTANCE:g}): its figures are the surrogate's extrapolation"
        )
    return notes
