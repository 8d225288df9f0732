"""Argument types the `sweep` verbs share: each refuses a bad value with what would be valid (exit 2)."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from train_entry.mix import MixRatio


def lr_fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a number in (0, 1], got {text!r}") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be in (0, 1] (a fraction of the base's max_lr), got {value}")
    return value


def mix(text: str) -> MixRatio:
    try:
        return MixRatio.parse(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def positive_int(text: str) -> int:
    """A whole number > 0, written plainly or as a float such as 1e12."""
    try:
        value = int(float(text))
    except (ValueError, OverflowError):
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value <= 0 or value != float(text):
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def positive_int_at_most(most: int) -> Callable[[str], int]:
    """positive_int no larger than `most`: a size the plan would otherwise loop or print for."""

    def parse(text: str) -> int:
        value = positive_int(text)
        if value > most:
            raise argparse.ArgumentTypeError(f"must be at most {most:.3g}, got {text!r}")
        return value

    return parse


def non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number >= 0, got {text!r}")
    return value


def whole_number_at_most(most: int) -> Callable[[str], int]:
    """A whole number from 0 to `most`: a count a typo could make an hour's work of."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = -1
        if not 0 <= value <= most:
            raise argparse.ArgumentTypeError(f"must be a whole number from 0 to {most:,}, got {text!r}")
        return value

    return parse


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"must be a fraction in (0, 1], got {text!r}")
    return value
