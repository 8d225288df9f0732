"""Evaluations drawn from a known law with noise: a ladder of four matched rungs (the same steps and schedule, trial
tokens and pretraining tokens proportional to N), a grid of trials on each, every trial evaluated four times along
a warmup-plus-cosine schedule, as a ladder's studies would hold them.

`python -m tests.sweep.ladder.synthetic > docs/examples/law_runs.csv` writes the documented example CSV; a test
checks the file is exactly this draw.
"""

from __future__ import annotations

import csv
import io
import sys

import numpy as np

from sweep.ladder.law import Law, Loss, LossLaw, Spans
from sweep.ladder.law_fit import FitQuality
from sweep.ladder.law_table import Observation, ObservationTable, lr_area, lr_mean
from train_entry.optimizer import OptimizerConfig

RUNGS = {"xs": 92_480, "s": 302_496, "m": 738_432, "l": 2_367_360}
"""Non-embedding parameters of the ladder's presets xs, s, m and a fourth rung about 3x m."""
PRETRAIN_TOKENS_PER_PARAMETER = 3.33
"""Each rung's base: what the built-in ladder's bases pretrain on."""
CPT_SHARE = 1 / 15
"""Each trial's tokens over its base's pretraining tokens: Llama 3.1 70B's 1 T over 15 T."""
TOKENS_PER_PARAMETER = CPT_SHARE * PRETRAIN_TOKENS_PER_PARAMETER
LR_FRACTIONS = (0.05, 0.1, 0.2, 0.4, 0.8)
SHARES = (1 / 9, 1 / 5, 1 / 3, 1 / 2, 2 / 3)
"""8:1, 4:1, 2:1, 1:1, 1:2."""
EVALUATIONS = 4
SCHEDULE = OptimizerConfig(warmup_steps=20, schedule="cosine", min_lr_ratio=0.1)
STEPS = 200
BASE_GENERAL, BASE_DOMAIN = 3.2, 3.9
_ALL = Spans(parameters=True, lr_area=True, domain_share=True)
TRUTH = Law(
    general=LossLaw(
        loss=Loss.GENERAL,
        offset=-0.002,
        shift=0.2,
        size_exponent=0.2,
        share_offset=0.3,
        share_exponent=1.5,
        area_rate=0.3,
        area_exponent=1.0,
        reference_parameters=5e5,
        reference_area=0.01,
        spans=_ALL,
    ),
    domain=LossLaw(
        loss=Loss.DOMAIN,
        offset=0.001,
        shift=0.03,
        size_exponent=0.0,
        share_offset=0.2,
        share_exponent=0.7,
        area_rate=20.0,
        area_exponent=0.5,
        reference_parameters=5e5,
        reference_area=0.01,
        spans=_ALL,
    ),
    general_quality=FitQuality(rows=1, r2=1.0, huber=0.0, starts_agreeing=1, rungs=[]),
    domain_quality=FitQuality(rows=1, r2=1.0, huber=0.0, starts_agreeing=1, rungs=[]),
    rows=1,
    trials=1,
    rungs=["truth"],
)
"""Forgetting that shrinks with N (so the critical share grows with it) and grows nearly linearly with the LR area,
domain gain that saturates early in the area and has diminishing returns in the share, so that the LR has an
optimum. With a 1 % budget at the rungs' own tokens the optimum lies inside the box, moving to higher LR and more
domain data with N: lr_fraction 0.084 and domain share 0.37 at xs, 0.127 and 0.44 at l, 0.148 and 0.46 at 7.4 M
parameters, 0.77 and 0.64 at Llama 3.1 70B's N."""


def draw(law: Law = TRUTH, *, noise: float = 5e-4, seed: int = 0, rungs: dict[str, int] = RUNGS) -> ObservationTable:
    """Every evaluation of a grid of trials on each rung, with N(0, noise) on each relative change."""
    rng = np.random.default_rng(seed)
    rows = []
    for rung, parameters in rungs.items():
        tokens, pretrain_tokens = TOKENS_PER_PARAMETER * parameters, PRETRAIN_TOKENS_PER_PARAMETER * parameters
        for number, (lr, share) in enumerate((lr, share) for lr in LR_FRACTIONS for share in SHARES):
            for evaluation in range(1, EVALUATIONS + 1):
                steps = STEPS * evaluation // EVALUATIONS
                scale = (parameters, pretrain_tokens, tokens * evaluation / EVALUATIONS)
                rows.append(_row(law, rung, number, scale, lr, share, steps, rng, noise))
    return ObservationTable.of(rows)


def _row(law, rung, number, scale, lr, share, steps, rng, noise) -> Observation:
    parameters, pretrain_tokens, tokens = scale
    mean = lr_mean(SCHEDULE, steps=steps, total_steps=STEPS)
    area = lr_area(lr, mean, tokens, pretrain_tokens)
    forgetting = float(law.forgetting(parameters, area, share)) + rng.normal(0, noise)
    gain = float(law.domain_gain(parameters, area, share)) + rng.normal(0, noise)
    return Observation(
        rung=rung,
        trial=str(number),
        parameters=parameters,
        pretrain_tokens=pretrain_tokens,
        tokens=tokens,
        lr_fraction=lr,
        lr_mean=mean,
        domain_share=share,
        general_loss=BASE_GENERAL * (1 + forgetting),
        domain_loss=BASE_DOMAIN * (1 - gain),
        base_general_loss=BASE_GENERAL,
        base_domain_loss=BASE_DOMAIN,
    )


def as_csv(table: ObservationTable) -> str:
    """The table in `sweep law fit`'s CSV form (docs/ladder.md)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    columns = ["rung", "trial", "seed", "parameters", "pretrain_tokens", "tokens", "lr_fraction", "lr_mean", "mix"]
    writer.writerow(columns + ["general_loss", "domain_loss", "base_general_loss", "base_domain_loss"])
    for row in table.rows:
        mix = f"{(1 - row.domain_share) / row.domain_share:.6g}:1"
        writer.writerow(
            [row.rung, row.trial, row.seed, f"{row.parameters:.0f}", f"{row.pretrain_tokens:.6g}"]
            + [f"{row.tokens:.6g}", f"{row.lr_fraction:g}"]
            + [f"{row.lr_mean:.6f}", mix]
            + [
                f"{value:.6f}"
                for value in (row.general_loss, row.domain_loss, row.base_general_loss, row.base_domain_loss)
            ]
        )
    return out.getvalue()


if __name__ == "__main__":
    sys.stdout.write(as_csv(draw()))
