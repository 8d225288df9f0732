"""The full run's validation sets: one per side the proxies measured, non-English only where the point has a share."""

from __future__ import annotations

from sweep.promote.plan.validation import validation_sets
from sweep.promote.request.config import ValidationPrefixes


def test_without_a_non_english_share_there_are_two_sets_and_each_missing_side_is_a_placeholder():
    sets, placeholders = validation_sets(ValidationPrefixes(domain="/d/v"), 0.0, placeholder_root="/PLACEHOLDER")
    assert [(item.side, item.prefix) for item in sets] == [
        ("general", "/PLACEHOLDER/data/general_valid_text_document"),
        ("domain", "/d/v"),
    ]
    assert placeholders == ["validation prefix general"]


def test_a_non_english_share_adds_its_set_last():
    given = ValidationPrefixes(general="/g", domain="/d", non_english="/n")
    sets, placeholders = validation_sets(given, 0.1, placeholder_root="/PLACEHOLDER")
    assert [item.side for item in sets] == ["general", "domain", "non_english"] and placeholders == []
