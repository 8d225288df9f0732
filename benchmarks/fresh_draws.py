"""Which validation draw each fresh-seed re-measure of benchmarks/decision_quality.py is measured on, and the check
that the benchmark's draws are the sweeps' own.

A sweep measures its trials on validation draws 0 .. D - 1 (sweep.run.sample_size.validation_draws). A fresh
re-measure must be fresh in text as well as in seed: it is measured on a draw past D, which no sweep here was
measured on. The draws come from one seeded partition of the validation text (train_entry.data.draws), so asking
prepare() for more of them leaves draws 0 .. D - 1 as they were, unless the text is too short for them all: then
the documents are dealt round-robin and every draw changes. Such extra draws are not stable: the benchmark asks for
as many as it has fresh seeds, fewer when that changes draws 0 .. D - 1, cycles through the stable ones it gets, and
refuses to go on when not even one is stable or when its draws differ from the text a sweep's trials were measured
on.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from sweep.files.rundir import RunDir
from sweep.run.prepare import Prepared
from train_entry.file_format import TRIAL_CONFIG
from train_entry.trial_config import CorpusPrefixes, TrialConfig

Text = tuple[str, ...]
"""sha256 of every .idx and .bin file of a draw's prefixes, in order: the text itself, not where it is cached (each
number of draws is cached in a folder of its own, so equal draws sit at different paths with different mtimes)."""


class DrawMismatch(Exception):
    """The benchmark's draws are not the sweeps' own: a fresh measure would not be fresh, or a re-measure at draw 0
    would not reproduce the sweeps' text."""


@dataclass(frozen=True)
class FreshDraws:
    sweep_draws: int
    """D: the draws a sweep of the spec measures on (0 .. D - 1)."""
    stable_extra: int
    """Draws past D the validation text holds without changing draws 0 .. D - 1, up to one per fresh seed."""
    by_seed: dict[int, int]
    """The draw each fresh seed is measured on."""

    @property
    def cycled(self) -> bool:
        return self.stable_extra < len(self.by_seed)

    def describe(self) -> str:
        """One line for the benchmark's output, computed from the assignment."""
        seeds = ", ".join(f"seed {seed} on draw {draw}" for seed, draw in self.by_seed.items())
        sweeps = f"0-{self.sweep_draws - 1}"
        line = f"fresh re-measures on validation draws no sweep here used (the sweeps': {sweeps}): {seeds}"
        if self.cycled:
            line += (
                f"; the validation text holds only {self.stable_extra} stable draw(s) past the sweeps', so "
                f"{len(self.by_seed) - self.stable_extra} fresh seed(s) re-use another fresh seed's draw (text no "
                "sweep used, but not independent of that seed's)"
            )
        return line


def assign(sweep_draws: int, stable_extra: int, seeds: Sequence[int]) -> FreshDraws:
    """Draw D + k for the k-th fresh seed, cycling through the stable_extra draws past D when there are fewer."""
    if stable_extra < 1:
        raise ValueError("at least one validation draw past the sweeps' is needed for a fresh re-measure")
    by_seed = {seed: sweep_draws + k % stable_extra for k, seed in enumerate(seeds)}
    return FreshDraws(sweep_draws=sweep_draws, stable_extra=min(stable_extra, len(seeds)), by_seed=by_seed)


def text_of(prefixes: CorpusPrefixes) -> Text:
    """The draw's content (see Text); the files are a validation set's few thousand tokens, hashed whole."""
    paths = [prefix for prefix in (prefixes.general, prefixes.domain, prefixes.non_english) if prefix is not None]
    files = [Path(f"{prefix}{suffix}") for prefix in paths for suffix in (".idx", ".bin")]
    return tuple(hashlib.sha256(path.read_bytes()).hexdigest() for path in files)


def texts_used(run: RunDir) -> dict[int, set[Text]]:
    """The text each validation draw held when the run's trials were measured on it, from their trial_config.json."""
    used: dict[int, set[Text]] = {}
    for config_path in sorted(run.trials.glob("*/trial_config.json")):
        try:
            config = TRIAL_CONFIG.read(config_path, TrialConfig)
            text = text_of(config.valid)
        except (OSError, ValueError) as error:  # ValueError: pydantic's and the format's own refusals
            raise DrawMismatch(f"{config_path}: the text its trial was measured on cannot be read back ({error})")
        used.setdefault(config.valid_draw, set()).add(text)
    return used


def mismatches(used: dict[str, dict[int, set[Text]]], ours: Sequence[CorpusPrefixes]) -> list[str]:
    """A sentence for each sweep's draw whose text is not the benchmark's draw of that number (`ours`: draws 0 ..
    D - 1 as the benchmark prepared them)."""
    texts = [text_of(prefixes) for prefixes in ours]
    found = []
    for run, draws in used.items():
        for draw, seen in sorted(draws.items()):
            if draw >= len(texts):
                found.append(f"{run}'s trials were measured on validation draw {draw}, past a sweep's {len(texts)}")
            elif seen != {texts[draw]}:
                found.append(f"{run}'s trials were measured on another text as validation draw {draw}")
    return found


def settle(
    prepare_with: Callable[[int], Prepared],
    used: dict[str, dict[int, set[Text]]],
    sweep_draws: int,
    seeds: Sequence[int],
) -> FreshDraws:
    """The fresh draws for `seeds`: prepare_with(extra) prepares the spec with `extra` draws past its own; the most
    extra draws (at most one per seed) whose draws 0 .. D - 1 are still the sweeps' (`used`, texts_used per run)
    are taken. DrawMismatch when even one extra draw changes them, or a sweep's trials measured on other text."""
    found: list[str] = []
    for extra in range(len(seeds), 0, -1):
        prepared = prepare_with(extra)
        found = mismatches(used, prepared.valid_draws[:sweep_draws])
        if not found:
            return assign(sweep_draws, extra, seeds)
    raise DrawMismatch(
        "the benchmark's validation draws are not the ones the sweeps were measured on ("
        + "; ".join(found)
        + "): the validation text is too short for one draw past the sweeps' without dealing every draw anew, or a "
        "sweep here ran on other text (another corpus, or code before the draws were fixed): add validation text, "
        "or start over in a new --workdir"
    )
