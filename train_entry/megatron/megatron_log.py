"""Megatron-LM's validation log lines, read and (for the rehearsal's trainer) written.

Megatron-LM core_v0.16.1 (megatron/training/training.py, evaluate_and_print_results) prints each evaluation as
` validation-<i> loss at iteration <N> | lm loss value: <x.xxxxxxE+yy> | lm loss PPL: ... |` under
--multiple-validation-sets, <i> the set's place in --valid-data-path; without it ` validation loss at ...`; the final
evaluation, and the only one under --skip-train, says `iteration <N> on validation set`. The loss is printed with
{:.6E}: six decimals, so a figure read back is the loss to 7 significant digits, and a diverged one reads NAN or INF.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

from train_entry.config import shown

_LINE = re.compile(
    r"validation(?:-(?P<set>\d+))? loss at iteration (?P<iteration>\d+)(?: on validation set)? \| "
    r"lm loss value: (?P<loss>[-+0-9.EeNnAaIiFf]+) \|"
)
_STARTS = re.compile(r"\bvalidation(?:-\d+)? loss at ")
"""How every validation report of Megatron-LM's begins, however the rest of it reads."""
PPL_CAP = 20.0
"""Megatron-LM caps the exponent of the perplexity it prints at 20."""


@dataclass(frozen=True)
class ValidationLoss:
    set_index: int
    """The set's place in --valid-data-path (0 for a single, unnumbered set)."""
    iteration: int
    loss: float


def parse_validation(line: str) -> ValidationLoss | None:
    """The validation loss a log line reports; None for any other line (or a number that is none)."""
    match = _LINE.search(line)
    if match is None:
        return None
    try:
        loss = float(match["loss"])
    except ValueError:
        return None
    return ValidationLoss(int(match["set"] or 0), int(match["iteration"]), loss)


def report_lines(text: str) -> Iterator[tuple[int, str]]:
    """(number, line) of each line of `text` in which a validation report begins, numbered as an editor numbers them;
    found by one scan of the whole text, so a log of millions of other lines (or of empty ones) costs no Python per
    line (10 million empty lines, read one by one, took 11 s)."""
    number, counted_to = 1, 0
    while (match := _STARTS.search(text, counted_to)) is not None:
        start = text.rfind("\n", counted_to, match.start()) + 1  # counted_to is 0 or the last line's own newline
        number += text.count("\n", counted_to, start)
        end = text.find("\n", match.end())
        counted_to = len(text) if end < 0 else end
        yield number, text[start:counted_to]


def read_validation(line: str) -> ValidationLoss | None:
    """parse_validation for a log from outside (a team's own pretrain_gpt.py run): None for a line that reports no
    validation loss; ValueError saying what is wrong with one that begins a report but does not read as one of the
    plan's sets' losses (a loss that is no number, or a loss without a set number, logged without
    --multiple-validation-sets)."""
    if _STARTS.search(line) is None:
        return None
    match = _LINE.search(line)
    if match is None:
        raise ValueError("a validation loss line not in Megatron-LM's form 'validation-<i> loss at iteration <N> | "
                         "lm loss value: <x.xxxxxxE+yy> |'")  # fmt: skip
    if match["set"] is None:
        raise ValueError(
            "a validation loss without a set number: the run evaluated one blended set, not the plan's sets apart "
            "(launch it with the plan's --valid-data-path and --multiple-validation-sets)"
        )
    try:
        loss = float(match["loss"])
    except ValueError:
        raise ValueError(f"the loss {shown(match['loss'], 40)} is not a number") from None
    return ValidationLoss(int(match["set"]), int(match["iteration"]), loss)


def validation_line(set_index: int, iteration: int, loss: float) -> str:
    """The line Megatron-LM prints for one set's loss under --multiple-validation-sets."""
    ppl = math.exp(min(PPL_CAP, loss)) if math.isfinite(loss) else loss
    return (
        f" validation-{set_index} loss at iteration {iteration} | lm loss value: {loss:.6E} | lm loss PPL: {ppl:.6E} | "
    )
