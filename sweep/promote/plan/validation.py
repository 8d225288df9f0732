"""The full run's validation sets: general, domain and (with a non-English share) non-English held-out text, each
evaluated apart, so domain_gain and forgetting are measured in the proxies' definitions.

A proxy's general validation loss is over general and non-English sequences blended (1 - share) : share
(train_entry.data.blend.build_validation_sets); its mean is that mix of the two sets' means, which is how
train_entry.megatron.validation.side_losses combines the full run's two losses. Megatron-LM core_v0.16.1 evaluates one loss per
--valid-data-path prefix under --multiple-validation-sets, in the order given: the plan's order is the sets' index
in its log lines ("validation-0 loss at iteration ...").
"""

from __future__ import annotations

from sweep.promote.request.config import ValidationPrefixes
from train_entry.megatron.validation import Side, ValidationSet


def validation_sets(
    given: ValidationPrefixes, non_english_share: float, *, placeholder_root: str
) -> tuple[list[ValidationSet], list[str]]:
    """The sets in Megatron-LM's order (general, domain, then non-English where the point has a share of it), and the
    sides that got a placeholder because neither the sweep nor the request named their text."""
    sides: list[Side] = ["general", "domain"] + (["non_english"] if non_english_share > 0 else [])
    sets, placeholders = [], []
    for side in sides:
        prefix = getattr(given, side)
        if prefix is None:
            prefix = f"{placeholder_root}/data/{side}_valid_text_document"
            placeholders.append(f"validation prefix {side}")
        sets.append(ValidationSet(side=side, prefix=prefix))
    return sets, placeholders
