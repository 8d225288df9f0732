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

from sweep.law.forms import FormName
from sweep.law.model import FitQuality, Law, Loss, LossLaw, References, Spans
from sweep.law.optimum import Surface
from sweep.law.table import Observation, ObservationTable
from sweep.target.schedule import lr_mean
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
_ALL = Spans(parameters=True, lr_area=True, lr_fraction=True, time=True, domain_share=True)
_QUALITY = FitQuality(rows=1, r2=1.0, huber=0.0, starts_agreeing=1, rungs=[])


def known_law(general: dict[str, float], domain: dict[str, float], *, form: FormName = "dcpt-area") -> Law:
    """A law of `form` with the given parameters, its references those of the tables drawn below."""
    references = References(parameters=5e5, lr_fraction=0.2, time=0.05)
    return Law(
        general=LossLaw(loss=Loss.GENERAL, form=form, values=general, references=references, spans=_ALL),
        domain=LossLaw(loss=Loss.DOMAIN, form=form, values=domain, references=references, spans=_ALL),
        general_quality=_QUALITY,
        domain_quality=_QUALITY,
        rows=1,
        trials=1,
        rungs=["truth"],
    )


TRUTH = known_law(
    {"offset": -0.002, "shift": 0.2, "size_exponent": 0.2, "share_offset": 0.3, "share_exponent": 1.5,
     "area_rate": 0.3, "area_exponent": 1.0},
    {"offset": 0.001, "shift": 0.03, "size_exponent": 0.0, "share_offset": 0.2, "share_exponent": 0.7,
     "area_rate": 20.0, "area_exponent": 0.5},
)  # fmt: skip
"""Forgetting that shrinks with N (so the critical share grows with it) and grows nearly linearly with the LR area,
domain gain that saturates early in the area and has diminishing returns in the share, so that the LR has an
optimum. With a 1 % budget at the rungs' own tokens the optimum lies inside the box, moving to higher LR and more
domain data with N: lr_fraction 0.084 and domain share 0.37 at xs, 0.127 and 0.44 at l, 0.148 and 0.46 at 7.4 M
parameters, 0.77 and 0.64 at Llama 3.1 70B's N."""


REPLICATED = ((0.1, 1 / 3), (0.2, 1 / 2))
"""Points each rung runs again at seed 1, as a ladder's replicates: the noise the law is held to."""


def draw(
    law: Surface = TRUTH,
    *,
    noise: float | tuple[float, float] = 5e-4,
    seed: int = 0,
    rungs: dict[str, int] = RUNGS,
    lr_fractions: tuple[float, ...] = LR_FRACTIONS,
    shares: tuple[float, ...] = SHARES,
    replicated: tuple[tuple[float, float], ...] = REPLICATED,
) -> ObservationTable:
    """Every evaluation of a grid of trials on each rung, and of its replicated points at seed 1, with N(0, noise)
    on each relative change (one sd for both, or forgetting's and domain_gain's)."""
    rng = np.random.default_rng(seed)
    sd = (noise, noise) if isinstance(noise, float) else noise
    points = [(lr, share, 0) for lr in lr_fractions for share in shares] + [(lr, share, 1) for lr, share in replicated]
    rows = []
    for rung, parameters in rungs.items():
        tokens, pretrain_tokens = TOKENS_PER_PARAMETER * parameters, PRETRAIN_TOKENS_PER_PARAMETER * parameters
        for number, (lr, share, trial_seed) in enumerate(points):
            for evaluation in range(1, EVALUATIONS + 1):
                steps = STEPS * evaluation // EVALUATIONS
                scale = (parameters, pretrain_tokens, tokens * evaluation / EVALUATIONS)
                rows.append(_row(law, (rung, number, trial_seed), scale, (lr, share), steps, rng, sd))
    return ObservationTable.of(rows)


def _row(law, trial, scale, point, steps, rng, sd) -> Observation:
    (rung, number, seed), (parameters, pretrain_tokens, tokens), (lr, share) = trial, scale, point
    mean = lr_mean(SCHEDULE, steps=steps, total_steps=STEPS)
    time = mean * tokens / pretrain_tokens
    forgetting = float(law.forgetting(parameters, lr, time, share)) + rng.normal(0, sd[0])
    gain = float(law.domain_gain(parameters, lr, time, share)) + rng.normal(0, sd[1])
    return Observation(
        rung=rung,
        trial=str(number),
        seed=seed,
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
