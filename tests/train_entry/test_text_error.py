"""TextError: how much another draw of validation text would move a trial's figures, against what drawing the text
again measures."""

from __future__ import annotations

import numpy as np
import pytest

from train_entry.trial_config import BaseLosses, SequenceLosses, TextError


def test_the_standard_error_is_what_resampling_the_sequences_measures():
    rng = np.random.default_rng(0)
    base_domain, base_general = rng.gamma(20, 0.25, 64), rng.gamma(20, 0.25, 64)
    # a trained model: the domain sequences improve by 20 % +- 8 %, the general ones worsen by 1 % +- 2 %
    domain = base_domain * rng.normal(0.8, 0.08, 64)
    general = base_general * rng.normal(1.01, 0.02, 64)
    base = BaseLosses(
        domain_loss=base_domain.mean(), general_loss=base_general.mean(),
        domain_sequences=base_domain.tolist(), general_sequences=base_general.tolist(),
    )  # fmt: skip

    error = TextError.of(base, SequenceLosses(domain=domain.tolist(), general=general.tolist()))

    picks = rng.integers(0, 64, (20_000, 64))  # the same trial measured on other draws of 64 sequences
    gain = 1 - domain[picks].mean(1) / base_domain[picks].mean(1)
    forgetting = general[picks].mean(1) / base_general[picks].mean(1) - 1
    assert error.domain_gain == pytest.approx(gain.std(), rel=0.05)
    assert error.forgetting == pytest.approx(forgetting.std(), rel=0.05)


def test_no_error_without_the_bases_losses_on_the_same_sequences():
    base = BaseLosses(domain_loss=3.0, general_loss=3.0)
    final = SequenceLosses(domain=[2.0, 2.1], general=[3.0, 3.1])

    assert TextError.of(base, final) is None
    other = base.model_copy(update={"domain_sequences": [3.0] * 3, "general_sequences": [3.0] * 3})
    assert TextError.of(other, final) is None


def test_a_diverged_trials_non_finite_losses_are_kept_and_give_no_error():
    base = BaseLosses(domain_loss=3.0, general_loss=3.0, domain_sequences=[3.0, 3.1], general_sequences=[3.0, 2.9])
    diverged = SequenceLosses(domain=[float("nan"), 2.0], general=[float("inf"), 3.0])

    assert TextError.of(base, diverged) is None and diverged.general[0] == float("inf")
