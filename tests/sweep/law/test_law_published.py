"""Published results reproduced by the same fitter (tests/sweep/law/published.py says where each number
comes from): D-CPT Law's constrained optimum from its own table, and the CMR law's critical mixture ratio at its
largest size from its three smaller sizes, with the direction of the critical share's trend with N."""

from __future__ import annotations

import pytest

from sweep.law.config import LawSettings
from sweep.law.fit import fit_law, fit_loss_law
from sweep.law.model import Loss
from sweep.law.optimum import SearchBox, constrained_optimum, critical_share
from sweep.law.runs import PUBLISHED_TREND, trend
from sweep.target.scale import TargetScale
from tests.sweep.law import published as paper

SETTINGS = LawSettings()


def test_dcpt_usage_1_optimum_within_0_003_of_the_papers():
    """D-CPT Law, Usage 1 (arXiv:2406.01375, Table 5): with the general loss at most 3 % over the base's, the
    optimum domain-corpus ratio is 0.924. The law fitted to the table's seven runs (one N, one D: only its share
    terms are free) puts the constrained optimum within 0.003 of it; linear interpolation between the table's
    rows gives 0.9245."""
    law = fit_law(paper.dcpt_table(), SETTINGS)
    assert law.general_quality.r2 > 0.999
    target = TargetScale(
        name="qwen1.5-1.8b", parameters=paper.DCPT_PARAMETERS, tokens=paper.DCPT_TOKENS,
        pretrain_tokens=paper.PRETRAIN_TOKENS, lr_mean=1.0,
    )  # fmt: skip
    box = SearchBox(lr_fraction=(1.0, 1.0), domain_share=(0.9, 1.0))
    optimum = constrained_optimum(law, target, box, paper.DCPT_BUDGET)
    assert optimum.inside
    assert optimum.point.domain_share == pytest.approx(paper.DCPT_OPTIMUM, abs=0.003)
    assert optimum.point.forgetting == pytest.approx(paper.DCPT_BUDGET, abs=1e-6)


def test_cmr_critical_ratio_at_3_1b_within_0_02_from_the_three_smaller_sizes():
    """CMR law (arXiv:2407.17467, section 5.3): 29.8 %, 34.9 %, 41.4 % at 460M, 940M, 1.6B, and 47.8 % at 3.1B. The
    law's forgetting (no shift without domain data, P = 0) fitted through the three smaller sizes' critical points
    puts the 3.1B critical share within 0.02 of the paper's; the fit has four free parameters for three points, and
    every start that fits them gives 0.486-0.492."""
    general, _ = fit_loss_law(paper.cmr_table(), Loss.GENERAL, SETTINGS, fixed={"offset": 0.0})
    time = paper.CMR_TOKENS / paper.PRETRAIN_TOKENS  # lr_mean 1: warmup then constant
    for size in ("460M", "940M", "1.6B"):
        fitted = critical_share(general, paper.CMR_SIZES[size], paper.CMR_LR_FRACTION, time, paper.CMR_TOLERANCE)
        assert fitted == pytest.approx(paper.CMR_CRITICAL_SHARE[size], abs=0.01)
    largest = critical_share(general, paper.CMR_SIZES["3.1B"], paper.CMR_LR_FRACTION, time, paper.CMR_TOLERANCE)
    assert largest == pytest.approx(paper.CMR_CRITICAL_SHARE["3.1B"], abs=0.02)
    assert general.values["size_exponent"] > 0  # larger models forget less


def test_the_fitted_trend_with_n_has_the_published_direction():
    """The report's line: the critical share's direction with N from the fitted law, beside the published one."""
    general, _ = fit_loss_law(paper.cmr_table(), Loss.GENERAL, SETTINGS, fixed={"offset": 0.0})
    target = TargetScale(
        name="3.1B", parameters=paper.CMR_SIZES["3.1B"], tokens=paper.CMR_TOKENS,
        pretrain_tokens=paper.PRETRAIN_TOKENS, lr_mean=1.0,
    )  # fmt: skip
    found = trend(paper.cmr_table(), general, target, paper.CMR_TOLERANCE)
    assert found.direction == "grows" and found.published == PUBLISHED_TREND and PUBLISHED_TREND.startswith("grows")
    assert [entry.parameters for entry in found.shares] == sorted(paper.CMR_SIZES.values())
