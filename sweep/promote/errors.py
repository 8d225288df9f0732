"""The error a promotion request that cannot become a valid plan ends with (exit code 2)."""

from pydantic import ValidationError


class PromotionError(ValueError):
    """A request that has no valid full-run plan; the message names the constraint and the values."""


def one_line(error: Exception) -> str:
    """A check's error for a PromotionError: pydantic's multi-line dump becomes the first problem's key path and
    message."""
    if not isinstance(error, ValidationError):
        return str(error)
    first = error.errors(include_url=False)[0]
    where = ".".join(str(part) for part in (error.title, *first["loc"]))
    more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
    return f"{where}: {first['msg'].removeprefix('Value error, ')}{more}"
