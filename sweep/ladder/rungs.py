"""Each rung of a ladder as a sweep spec of its own, matched to the other rungs and to the target (docs/ladder.md,
"Matched rungs").

Every rung's trials run the spec's proxy as written (its steps, warmup, schedule and evaluations) with a batch in
proportion to N, the largest rung's being the spec's own (rounded up to a multiple of a sharded rung's workers,
sweep.ladder.gpus): so trial tokens grow with N at one step count. A built-in
rung's base is pretrained on its trials' tokens over the target's continued-pretraining share (the full run's tokens
over the target's pretraining tokens), so every rung's trials read that share of their own base's pretraining, as
the full run will of the target's; and at its own peak LR by a stated rule (MAX_LR_EXPONENT), so that lr_fraction
means a fraction of a tuned peak LR at every rung, as it does at the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field

from sweep.ladder.config import BuiltinRung, HfRung, RungName
from sweep.spec.rung_trial import RungTrial, rung_trial
from sweep.spec.spec import BUILTIN_BASE, SweepSpec
from sweep.target.full_run import FullRun, full_run_target
from sweep.target.load import load_target
from sweep.target.scale import LadderTarget, Ratios
from train_entry.config import StrictConfig

MAX_LR_EXPONENT = 0.125
"""A built-in rung's base is pretrained at base.max_lr x (C / C_largest)^-0.125, C = N x its pretraining tokens: the
compute exponent of DeepSeek LLM's fitted optimal peak LR, eta_opt = 0.3118 C^-0.1250 (arXiv:2401.02954, section
3.1, Eq. 1), anchored at the largest rung, whose base pretrains at base.max_lr itself (at the `m` preset's size and
tokens, today's builtin:tiny-llama). With pretraining tokens in proportion to N it is N^-0.25: the `xxs` base pretrains
at 2.0 x the `m` base's peak LR."""
MISMATCH = 2.0
"""A rung's ratio more than this factor from the target's is a warning in the report."""


class RungDesign(StrictConfig):
    """How one rung is matched: its size, its base's pretraining and peak LR, its trials' batch and tokens."""

    name: RungName
    parameters: int = Field(gt=0)
    """Non-embedding parameters (sweep.scale.non_embedding_params)."""
    pretrain_tokens: float = Field(gt=0.0)
    max_lr: float = Field(gt=0.0, le=1.0)
    """The base's own pretraining peak LR."""
    batch_size: int = Field(gt=0)
    steps: int = Field(gt=0)
    warmup_steps: int = Field(ge=0)
    trial_tokens: int = Field(gt=0)

    @property
    def ratios(self) -> Ratios:
        return Ratios(
            pretrain_tokens_per_parameter=self.pretrain_tokens / self.parameters,
            tokens_per_parameter=self.trial_tokens / self.parameters,
            cpt_share=self.trial_tokens / self.pretrain_tokens,
            steps=self.steps,
            warmup_share=self.warmup_steps / self.steps,
        )


def ladder_target(spec: SweepSpec) -> LadderTarget:
    """The target a ladder's rungs are matched to and its law predicts at: ladder.target after ladder.full_run_tokens
    of the full run, whose schedule decays as the spec's proxy does (sweep.target.full_run, as a promotion of the
    ladder makes it); TargetError when the target cannot be read or has no pretraining tokens."""
    run = FullRun(tokens=spec.ladder.full_run_tokens, tokens_from="ladder.full_run_tokens")
    return full_run_target(load_target(spec.ladder.target), run, spec.proxy)


def mismatches(rungs: Sequence[RungDesign], target: Ratios) -> list[str]:
    """One line per ratio in which a rung differs from the target's by more than MISMATCH: those rungs' values and
    the target's."""
    lines = []
    for name in Ratios.model_fields:
        theirs = float(getattr(target, name))
        far = [(rung.name, float(getattr(rung.ratios, name))) for rung in rungs]
        far = [(rung, mine) for rung, mine in far if not _within(mine, theirs)]
        if far:
            values = [mine for _, mine in far]
            shown = f"{min(values):.3g}" if min(values) == max(values) else f"{min(values):.3g} to {max(values):.3g}"
            lines.append(f"{name} {shown} at rung(s) {', '.join(rung for rung, _ in far)}, {theirs:.3g} at the target")
    return lines


def _within(mine: float, theirs: float) -> bool:
    if mine <= 0 or theirs <= 0:
        return mine == theirs
    return max(mine / theirs, theirs / mine) <= MISMATCH


@dataclass(frozen=True)
class RungSpec:
    design: RungDesign
    spec: SweepSpec
    """The rung's own sweep: no ladder section, so it loads and runs as any spec does."""

    @property
    def name(self) -> str:
        return self.design.name

    @property
    def parameters(self) -> int:
        return self.design.parameters


def rung_specs(spec: SweepSpec, cpt_share: float) -> list[RungSpec]:
    """The ladder's rungs, smallest first, each with its sweep spec, its trials reading `cpt_share` of their base's
    pretraining tokens (built-in rungs; a Hugging Face base's pretraining is what it was)."""
    ladder = spec.ladder
    if ladder is None:
        raise ValueError("the spec has no ladder section")
    batches = ladder.batch_sizes(spec.proxy.batch_size)
    trials = [
        rung_trial(index, rung, batch, spec.execution, spec.proxy, spec.base.builtin)
        for index, (rung, batch) in enumerate(zip(ladder.rungs, batches))
    ]
    designs = [_design(spec, rung, trial.batch_size, cpt_share) for rung, trial in zip(ladder.rungs, trials)]
    if ladder.builtin:
        anchor = designs[-1].parameters * designs[-1].pretrain_tokens
        designs = [
            design.model_copy(update={"max_lr": _max_lr(spec, design.parameters * design.pretrain_tokens / anchor)})
            for design in designs
        ]
    return [
        RungSpec(design=design, spec=_rung_spec(spec, rung, design, trial))
        for rung, design, trial in zip(ladder.rungs, designs, trials)
    ]


def _design(spec: SweepSpec, rung: BuiltinRung | HfRung, batch: int, share: float) -> RungDesign:
    proxy = spec.proxy
    trial_tokens = proxy.steps * batch * proxy.seq_len
    if isinstance(rung, HfRung):
        pretrain_tokens, max_lr = rung.pretrain_tokens, rung.max_lr
    else:
        template = spec.base.builtin
        pretrain_tokens = _pretrain_steps(spec, trial_tokens / share) * template.batch_size * template.seq_len
        max_lr = spec.base.max_lr  # until rung_specs scales it by the rule
    return RungDesign(
        name=rung.name,
        parameters=rung.parameters,
        pretrain_tokens=pretrain_tokens,
        max_lr=max_lr,
        batch_size=batch,
        steps=proxy.steps,
        warmup_steps=proxy.warmup_steps,
        trial_tokens=trial_tokens,
    )


def _pretrain_steps(spec: SweepSpec, tokens: float) -> int:
    template = spec.base.builtin
    return max(2, round(tokens / (template.batch_size * template.seq_len)))


def _max_lr(spec: SweepSpec, compute_ratio: float) -> float:
    """MAX_LR_EXPONENT's rule, to four significant digits (a cached base's key)."""
    return float(f"{spec.base.max_lr * compute_ratio**-MAX_LR_EXPONENT:.4g}")


def _rung_spec(spec: SweepSpec, rung: BuiltinRung | HfRung, design: RungDesign, trial: RungTrial) -> SweepSpec:
    raw = spec.model_dump(mode="json")
    raw["ladder"] = None
    raw["base"] = _base(spec, rung, design)
    raw["proxy"]["batch_size"] = design.batch_size
    raw["execution"]["gpus"] = trial.gpus  # the rung's own, one worker per GPU
    if trial.gpus > 0:
        raw["execution"]["workers"] = None
    return SweepSpec.model_validate(raw)


def _base(spec: SweepSpec, rung: BuiltinRung | HfRung, design: RungDesign) -> dict[str, Any]:
    if isinstance(rung, HfRung):
        tokenizer = None if rung.tokenizer is None else str(rung.tokenizer)
        return {"model": str(rung.model), "max_lr": rung.max_lr, "tokenizer": tokenizer, "builtin": None}
    template = spec.base.builtin
    pretrain_steps = _pretrain_steps(spec, design.pretrain_tokens)
    warmup = min(round(template.warmup_steps * pretrain_steps / template.pretrain_steps), pretrain_steps - 1)
    shape = rung.model_dump(exclude={"name"})
    return {
        "model": BUILTIN_BASE,
        "max_lr": design.max_lr,
        "tokenizer": None if spec.base.tokenizer is None else str(spec.base.tokenizer),
        "builtin": template.model_dump() | shape | {"pretrain_steps": pretrain_steps, "warmup_steps": warmup},
    }
