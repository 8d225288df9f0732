"""What a table of runs must hold before any form is fitted to it: each row is bounded on its own
(sweep.law.table.Observation); these are the table's, which no row alone can break. A table that fails one is
refused with the reason (LawInputError, exit 2 at the command line) before minutes of fitting, never fitted into
nonsense.
"""

from __future__ import annotations

import numpy as np

from sweep.law.table import LawInputError, ObservationTable

MIN_ROWS = 20
"""Fewer evaluations than this do not determine seven parameters per loss with any margin."""
MIN_SIZES = 2
"""A law over N needs two model sizes at least; one size says nothing of how the optimum moves to the target."""


def check_fittable(table: ObservationTable, source: str) -> None:
    """LawInputError naming `source` and what the table lacks: too few rows, too few distinct evaluations, one model
    size, or a loss that never changes."""
    if len(table) < MIN_ROWS:
        raise LawInputError(f"{source}: {len(table)} evaluations; a law of seven parameters per loss needs {MIN_ROWS}")
    distinct = len(np.unique(_evaluations(table), axis=0))
    if distinct < MIN_ROWS:
        raise LawInputError(
            f"{source}: {len(table)} rows but only {distinct} distinct evaluation(s) (the same N, tokens, lr_fraction, "
            f"lr_mean, mix and losses repeated); a law of seven parameters per loss needs {MIN_ROWS} distinct ones"
        )
    sizes = sorted(set(table.parameters.tolist()))
    if len(sizes) < MIN_SIZES:
        raise LawInputError(
            f"{source}: every row has N = {sizes[0]:.4g} (rung(s) {', '.join(table.rungs)}); a law over N needs runs "
            f"at {MIN_SIZES} model sizes or more, so that it can say how the optimum moves to the target"
        )
    for name, values in (("forgetting", table.forgetting), ("domain_gain", table.domain_gain)):
        if np.ptp(values) <= 1e-12 * max(1.0, float(np.max(np.abs(values)))):
            raise LawInputError(
                f"{source}: every row has the same {name} ({float(values[0]):.6g}: each loss over its base's the "
                "same in every row); the law has nothing to fit"
            )


def _evaluations(table: ObservationTable) -> np.ndarray:
    columns = (
        table.parameters, table.tokens, table.pretrain_tokens, table.lr_fraction, table.lr_mean, table.domain_share,
        table.forgetting, table.domain_gain,
    )  # fmt: skip
    return np.column_stack(columns)
