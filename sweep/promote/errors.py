"""The error a promotion request that cannot become a valid plan ends with (exit code 2)."""


class PromotionError(ValueError):
    """A request that has no valid full-run plan; the message names the constraint and the values."""

