"""domain_gain and forgetting are written once (train_entry.trial_config): the metrics and every reader use them."""

import pytest
from pydantic import ValidationError

from train_entry.trial_config import (
    BaseLosses,
    Metrics,
    domain_gain,
    forgetting,
)


def test_a_trials_metrics_are_the_two_formulas_of_its_losses_against_the_bases():
    base = BaseLosses(domain_loss=5.0, general_loss=4.0)
    metrics = Metrics.measure(
        base=base, domain_loss=4.0, general_loss=4.1, step=10, tokens_seen=80, train_loss=4.2, lr=1e-4
    )
    assert metrics.domain_gain == domain_gain(4.0, 5.0) == pytest.approx(0.2)
    assert metrics.forgetting == forgetting(4.1, 4.0) == pytest.approx(0.025)


@pytest.mark.parametrize("loss", [0.0, -1.0, 100.5])
def test_a_base_loss_is_above_zero_and_in_nats(loss):
    """Both formulas divide by the base's losses: zero, a negative or a loss past 100 nats per token is refused
    wherever one is read (a trial's stored base, the base-loss cache, a trial_config.json, a job's watch)."""
    with pytest.raises(ValidationError, match="domain_loss"):
        BaseLosses(domain_loss=loss, general_loss=3.0)
