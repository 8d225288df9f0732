"""A trial's resolved config (trials/<n>/trial_config.json) checked against what it was resolved from, before the plan
takes its schedule, LR floor, non-English share and base from it.

The trial wrote the file as it started, from the sweep's spec and its own trial in the study; a run directory is
copied and edited, so promotion reads it back as a claim: its point, seed and validation draw the study's trial's,
its proxy recipe and max_lr the study's plan's (an edited schedule or min_lr_ratio changed the full run's LR
flags), its base's losses the ones the trial stored, and its non-English share the spec copy's (an edited share
changed the full run's blend). A mismatch names the file, the field and both values.
"""

from __future__ import annotations

from sweep.files.records import CorruptFile, first_difference
from sweep.files.rundir import RunDir
from sweep.promote.errors import PromotionError
from sweep.spec.spec import NonEnglishConfig, spec_copy_content
from sweep.study.record import base_losses_of
from sweep.study.run_study import StudyOpener
from sweep.study.table import trial_rows
from train_entry.config import StrictConfig, shown
from train_entry.trial_config import BaseLosses, TrialConfig

RERUN = "the trial wrote another config than this; run `sweep run SPEC --name RUN` again, or promote another run"


class _Resolved(StrictConfig):
    """What a trial config must say, as its sources give it (the trial config's own fields of those names)."""

    lr_fraction: float
    domain_share: float
    """Of its mix."""
    seed: int
    valid_draw: int
    max_lr: float
    proxy: dict
    base_losses: dict
    non_english_share: float | None = None


def check_trial_config(run: RunDir, study: StudyOpener, number: int, trial: TrialConfig) -> None:
    """PromotionError naming trials/<number>/trial_config.json, the field and both values unless `trial` is what the
    study's trial `number`, the study's plan and the run's spec copy (when it has one) give."""
    path = run.trial_config(number)
    record, sweep = study()
    row = next((row for row in trial_rows(sweep) if row.number == number), None)
    if row is None:
        raise PromotionError(f"{path}: the study holds no trial {number} this config could be of; {RERUN}")
    try:
        base = base_losses_of(sweep.frozen(number), study=f"study {record.study_name!r}")
    except CorruptFile as error:
        raise PromotionError(str(error)) from None
    expected = _Resolved(
        lr_fraction=row.lr_fraction,
        domain_share=row.domain_share,
        seed=row.seed if row.seed is not None else sweep.plan.proxy.seed,
        valid_draw=row.valid_draw,
        max_lr=sweep.plan.max_lr,
        proxy=sweep.plan.proxy.model_dump(mode="json"),
        base_losses=_losses(base),
        non_english_share=_spec_share(run),
    )
    said = trial.model_dump(mode="json", include=set(_Resolved.model_fields) - {"base_losses"})
    stored = _Resolved(**said, domain_share=trial.mix.domain_share, base_losses=_losses(trial.base_losses))
    if expected.non_english_share is None:  # no spec copy to say it
        stored = stored.model_copy(update={"non_english_share": None})
    mismatch = first_difference(stored, expected)
    if mismatch is not None:
        key, value, source = mismatch
        where = _source(key, number)
        raise PromotionError(f"{path}: {key} is {shown(value)}, but {where} gives {shown(source)}; {RERUN}")


def _losses(base: BaseLosses) -> dict:
    """The two losses the study keeps of a trial's base (the per-sequence ones stay in the trial's config)."""
    return base.model_dump(mode="json", include={"domain_loss", "general_loss"})


def _spec_share(run: RunDir) -> float | None:
    """The non-English share of the run's spec copy (0 without non-English data); None without a spec copy."""
    if not run.spec_copy.is_file():
        return None
    data = spec_copy_content(run.spec_copy).get("data")
    non_english = data.get("non_english") if isinstance(data, dict) else None
    if not isinstance(non_english, dict):
        return 0.0
    share = non_english.get("share", NonEnglishConfig.model_fields["share"].default)
    if not isinstance(share, int | float) or isinstance(share, bool):
        raise PromotionError(f"{run.spec_copy}: data.non_english.share is {shown(share)}, not a number")
    return float(share)


def _source(key: str, number: int) -> str:
    if key.startswith(("proxy", "max_lr")):
        return "the sweep's plan in its study"
    if key == "non_english_share":
        return "the run's spec copy"
    return f"the study's trial {number}"

