"""The full run at the target: its length (tokens over a global batch), its warmup and its LR schedule, and the
target as the loss law and a ladder see that run (N, pretraining tokens, the run's tokens, its mean LR).

One recipe, whoever asks: `sweep law fit`, a ladder (`sweep run` of a ladder spec) and `sweep promote` (its plan and
the law's point in it) all build the target here from the same target, tokens and proxy recipe, so they give the
same figures (tests/sweep/target/test_full_run.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sweep.scale import non_embedding_params
from sweep.target.errors import TargetError
from sweep.target.families.registry import REFERENCE_SEQ_LENGTH
from sweep.target.scale import MAX_PARAMETERS, MIN_PARAMETERS, LadderTarget, TargetScale
from sweep.target.schedule import lr_mean
from sweep.target.target import Target
from train_entry.optimizer import OptimizerConfig

TOKENS = 10**12
"""The full run's tokens unless given: the reference recipe's 1 T."""
MOST_TOKENS = 10**15
"""The most tokens a full run may be planned for: 30x the most any model is reported trained on (Qwen3's 36 T,
arXiv:2505.09388, section 3.1), so a typo such as 1e30 is refused instead of planned as 3.4e18 days."""
REFERENCE_SEQUENCES = 1440
REFERENCE_BATCH_TOKENS = REFERENCE_SEQUENCES * REFERENCE_SEQ_LENGTH
"""Tokens per optimizer step unless given: the reference recipe's 1440 sequences x 8192 = 11.8 M."""
MOST_BATCH_TOKENS = 1 << 30
"""The most tokens per step: 90x the reference recipe's 11.8 M."""
WARMUP_FRACTION = 0.01
"""Share of the steps spent warming the LR up from 0 unless given: re-warming a converged base needs a few hundred
steps at the reference batch (~850 of ~85 000) before the peak is safe."""
PROXY_DECAY = OptimizerConfig(warmup_steps=0)
"""The decay and floor the full run takes from its proxy when none is given: the proxy's defaults (cosine to a tenth
of the peak), as the shipped specs' proxy has them."""


@dataclass(frozen=True)
class FullRun:
    """The full run's length and warmup (sweep promote's tokens, global_batch_tokens and warmup_fraction)."""

    tokens: int = TOKENS
    global_batch_tokens: int = REFERENCE_BATCH_TOKENS
    warmup_fraction: float = WARMUP_FRACTION
    tokens_from: str = "--tokens"
    """Where `tokens` was given, as an error names it: a flag, or a ladder spec's key."""

    def steps(self) -> int:
        """Optimizer steps: the tokens over the global batch, rounded up; TargetError when they are too few for any
        LR warmup (at --tokens 1 the plan was one iteration, starting at the peak LR, without a word)."""
        iterations = math.ceil(self.tokens / self.global_batch_tokens)
        if self.warmup_fraction > 0 and self.warmup_steps(iterations) == 0:
            fewest = math.floor(0.5 / self.warmup_fraction) + 1  # the fewest whose warmup rounds to one iteration
            raise TargetError(
                f"tokens = {self.tokens:,} ({self.tokens_from}) is {iterations:,} iteration(s) of "
                f"{self.global_batch_tokens:,} tokens (global_batch_tokens), too few for a warmup of warmup_fraction "
                f"{self.warmup_fraction:g} of them: re-warming the base's LR needs at least {fewest:,} iterations, "
                f"{fewest * self.global_batch_tokens:,} tokens"
            )
        return iterations

    def warmup_steps(self, steps: int) -> int:
        return round(steps * self.warmup_fraction)


def full_run_schedule(warmup_steps: int, recipe: OptimizerConfig) -> OptimizerConfig:
    """The full run's LR schedule, as its plan writes it: its own warmup, then the proxy's (`recipe`'s) decay shape and
    floor, the ones the sweep measured."""
    return OptimizerConfig(warmup_steps=warmup_steps, schedule=recipe.schedule, min_lr_ratio=recipe.min_lr_ratio)


def full_run_target(target: Target, run: FullRun, recipe: OptimizerConfig) -> LadderTarget:
    """The target as the law sees the full run: N counted as the rungs' is, the base's pretraining tokens, the run's
    tokens and the mean of its schedule's LR (full_run_schedule); TargetError when the target has no pretraining
    tokens or an N the law cannot predict at."""
    if target.pretrain_tokens is None:
        raise TargetError(
            f"target {target.name} has no pretrain_tokens, which a ladder's law counts the run's tokens in "
            f"({target.source or 'not given'}): give them with --pretrain-tokens (or pretrain_tokens: in a target "
            "YAML, or in sweep promote's --config)"
        )
    steps = run.steps()
    warmup = run.warmup_steps(steps)
    parameters = non_embedding_params(target.model)
    if not MIN_PARAMETERS <= parameters <= MAX_PARAMETERS:
        raise TargetError(
            f"target {target.name}: {parameters:.4g} non-embedding parameters, outside the {MIN_PARAMETERS:g} to "
            f"{MAX_PARAMETERS:g} a ladder's law predicts at ({target.source or 'its model shape'})"
        )
    scale = TargetScale(
        name=target.name,
        parameters=parameters,
        pretrain_tokens=target.pretrain_tokens,
        tokens=run.tokens,
        lr_mean=lr_mean(full_run_schedule(warmup, recipe), steps=steps, total_steps=steps),
    )
    return LadderTarget(scale=scale, steps=steps, warmup_steps=warmup)
