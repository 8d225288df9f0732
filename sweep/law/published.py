"""What published work says about how continued pretraining changes with model size, which the law's trends are
printed beside and its refusals argue from."""

from __future__ import annotations

FORGETTING_TREND = "larger models forget less (arXiv:2502.06042)"
"""Forgetting against N: smaller models forget more of their general knowledge under the same continued
pretraining."""

CRITICAL_SHARE_TREND = (
    "the CMR law's critical share rises from 29.8 % at 460M to 47.8 % at 3.1B parameters (arXiv:2407.17467, "
    "section 5.3)"
)
"""The domain share past which general loss rises, against N."""
