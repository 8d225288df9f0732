"""The sweep's own Megatron prefixes as the full run's data: what the proxies read is what the full run reads.

A side of the mix whose train corpus in the sweep's spec is Megatron indexed datasets goes into the plan's
--data-path as those same prefixes, each weighted by its token count as the proxies' blend weighted it, when the
promotion request names no prefix of its own for that side; the tokenizer that made them is the full run's too. A side
whose validation text is one Megatron prefix is, likewise, the full run's validation set of that side: the full run is
measured on the held-out text the proxies were.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import ConfigDict, ValidationError, field_validator

from sweep.files.rundir import RunDir
from sweep.promote.errors import PromotionError
from sweep.promote.point.ladder import finished_ladder
from sweep.promote.request.config import DataPrefix, PromotionConfig, ValidationPrefixes
from sweep.spec.spec import spec_copy_content
from train_entry.config import StrictConfig
from train_entry.data.corpus import CorpusError, is_megatron_prefix
from train_entry.data.megatron_prefix import prefix_tokens

SIDES = ("general", "non_english", "domain")


class _Side(StrictConfig):
    """What the plan reads of one corpus in the spec copy: its train paths and the tokenizer of its prefixes."""

    model_config = ConfigDict(extra="ignore")

    train: list[str]
    valid: list[str] = []
    tokenizer: str | None = None

    @field_validator("train", "valid", mode="before")
    @classmethod
    def _one_or_many(cls, value: Any) -> Any:
        return [value] if isinstance(value, str) else value


def with_sweep_prefixes(config: PromotionConfig, run: RunDir) -> PromotionConfig:
    """`config`, each side it leaves empty filled with the sweep's Megatron prefixes for that side (with their
    token counts), its tokenizer, when unset, with the one that made them, and each validation set it leaves unset
    with the sweep's own validation prefix of that side."""
    corpora = _spec_sides(run)
    sides = _megatron_sides(corpora)
    data = config.data
    filled = {side: prefixes for side, (prefixes, _) in sides.items() if not getattr(data, side)}
    update: dict[str, Any] = dict(filled)
    tokenizers = {sides[side][1] for side in filled}
    if data.tokenizer is None and len(tokenizers) == 1:
        update["tokenizer"] = tokenizers.pop()
    valid = _validation_prefixes(corpora, data.valid)
    if valid != data.valid:
        update["valid"] = valid
    if not update:
        return config
    return config.model_copy(update={"data": data.model_copy(update=update)})


def _validation_prefixes(corpora: dict[str, _Side], given: ValidationPrefixes) -> ValidationPrefixes:
    """`given`, each unset side filled with the sweep's validation text of that side where it is one Megatron prefix
    (Megatron-LM evaluates one loss per prefix: a side held in several would be several sets, not the proxies' one)."""
    found = {
        side: corpus.valid[0]
        for side, corpus in corpora.items()
        if getattr(given, side) is None and len(corpus.valid) == 1 and is_megatron_prefix(Path(corpus.valid[0]))
    }
    return given.model_copy(update=found) if found else given


def _spec_sides(run: RunDir) -> dict[str, _Side]:
    """The corpora of the sweep's spec copy, by side; empty without a spec copy."""
    spec = spec_copy(run)
    if spec is None:
        return {}
    corpora = spec_copy_content(spec).get("data", {})
    try:
        return {side: _Side.model_validate(corpora[side]) for side in SIDES if isinstance(corpora.get(side), dict)}
    except (ValidationError, AttributeError) as error:
        raise PromotionError(f"{spec}: not the spec copy a sweep writes ({error})") from None


def _megatron_sides(sides: dict[str, _Side]) -> dict[str, tuple[list[DataPrefix], str | None]]:
    found = {}
    for side, corpus in sides.items():
        prefixes = [Path(path) for path in corpus.train]
        if prefixes and all(is_megatron_prefix(prefix) for prefix in prefixes):
            try:
                found[side] = ([DataPrefix(prefix=str(p), tokens=prefix_tokens(p)) for p in prefixes], corpus.tokenizer)
            except CorpusError as error:
                raise PromotionError(f"the sweep's data.{side}.train: {error}") from None
    return found


def spec_copy(run: RunDir) -> Path | None:
    """The spec the sweep ran (of a ladder: its largest rung's, whose data every rung shares)."""
    if run.spec_copy.is_file():
        return run.spec_copy
    if run.is_ladder:
        spec = finished_ladder(run)[1].spec_copy
        return spec if spec.is_file() else None
    return None
