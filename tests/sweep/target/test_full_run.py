"""The full run at the target, one recipe whoever asks: `sweep law fit` (its flags), a ladder (`sweep run` of a ladder
spec) and `sweep promote` (its request's tokens and the proxy's schedule) give the same target figures for the same
target, tokens and proxy, and those figures are the target's: its N, its base's tokens, the run's tokens, and the mean
of the schedule the plan writes."""

from __future__ import annotations

import pytest

from cli import main
from sweep.files.compat import LAW_FIT
from sweep.ladder.rungs import ladder_target
from sweep.law.runs import LawFitReport
from sweep.promote.request.config import PromotionConfig
from sweep.scale import non_embedding_params
from sweep.spec.spec import load_spec
from sweep.target.errors import TargetError
from sweep.target.families.llama import LLAMA_3_1_70B
from sweep.target.full_run import FullRun, full_run_schedule, full_run_target
from sweep.target.load import load_target
from sweep.target.schedule import lr_mean
from tests.conftest import REPO

SPEC = REPO / "search_spaces" / "lr_mix_ladder.yaml"
EXAMPLE = REPO / "docs" / "examples" / "law_runs.csv"
TOKENS = 2 * 10**11
"""Not the default 1 T: the run's tokens reach every path as given."""


@pytest.mark.parametrize(
    ("schedule", "floor", "mean"),
    # 1 % warmup (mean 1/2 there), then the decay's own mean: linear to 0 is 1/2, cosine to 0.3 is (1 + 0.3) / 2.
    [("linear", 0.0, 0.5), ("cosine", 0.3, 0.65), ("constant", 0.1, 0.01 * 0.5 + 0.99)],
)
def test_law_fit_a_ladder_and_a_promotion_give_one_target(tmp_path, schedule, floor, mean):
    spec = load_spec(SPEC)
    proxy = spec.proxy.model_copy(update={"schedule": schedule, "min_lr_ratio": floor})
    ladder = spec.ladder.model_copy(update={"full_run_tokens": TOKENS})
    laddered = ladder_target(spec.model_copy(update={"proxy": proxy, "ladder": ladder}))
    output = tmp_path / "law.json"
    flags = ["--tokens", str(TOKENS), "--schedule", schedule, "--min-lr-ratio", str(floor), "--refits", "0"]
    assert main(["law", "fit", str(EXAMPLE), "--target", spec.ladder.target, *flags, "--output", str(output)]) == 0
    fitted = LAW_FIT.read(output, LawFitReport).prediction.target
    request = PromotionConfig(target=spec.ladder.target, tokens=TOKENS)
    promoted = full_run_target(load_target(request.require_target()), request.full_run, proxy)
    assert fitted == laddered.scale == promoted.scale
    steps = (16_955, 170)  # 2e11 tokens over 1440 x 8192 a step, rounded up; 1 % of them
    assert (laddered.steps, laddered.warmup_steps) == (promoted.steps, promoted.warmup_steps) == steps
    target = laddered.scale
    assert (target.name, target.parameters) == ("llama3.1-70b", non_embedding_params(LLAMA_3_1_70B))
    assert (target.tokens, target.pretrain_tokens) == (TOKENS, 15e12)
    assert target.lr_mean == pytest.approx(mean, abs=0.005)
    # The mean is the plan's own schedule's: its warmup, then the proxy's decay to the proxy's floor.
    written = full_run_schedule(promoted.warmup_steps, proxy)
    assert (written.schedule, written.min_lr_ratio, written.warmup_steps) == (schedule, floor, 170)
    assert lr_mean(written, steps=promoted.steps, total_steps=promoted.steps) == target.lr_mean


def test_too_few_tokens_for_a_warmup_is_the_targets_error_naming_the_fewest_and_where_they_were_given():
    with pytest.raises(TargetError, match=r"\(--tokens\) .* too few for a warmup of .* 0.01 .* at least 51 iterations"):
        FullRun(tokens=10**6).steps()
    assert FullRun(tokens=10**6, warmup_fraction=0.0).steps() == 1
    spec = load_spec(SPEC)
    ladder = spec.ladder.model_copy(update={"full_run_tokens": 10**6})
    with pytest.raises(TargetError, match=r"^tokens = 1,000,000 \(ladder.full_run_tokens\) is 1 iteration"):
        ladder_target(spec.model_copy(update={"ladder": ladder}))
