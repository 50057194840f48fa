"""The one strict integer parser (`modelport.strict_int`): ASCII digits only, bounded, a 400 naming the field."""

from __future__ import annotations

import pytest

from modelport.errors import InvalidParameters
from modelport.strict_int import MAX_DIGITS, bounded_int, plain_int


def test_only_plain_ascii_digits_are_integers() -> None:
    assert plain_int("0") == 0 and plain_int("42") == 42 and plain_int("9" * MAX_DIGITS) == 10**MAX_DIGITS - 1
    assert plain_int("-5", signed=True) == -5
    for odd in ("²", "٣", "９", "1²", "+5", "-5", " 5", "5 ", "5_000", "0x10", "1e3", "", "9" * (MAX_DIGITS + 1)):
        assert plain_int(odd) is None, odd


def test_bounded_int_names_the_field() -> None:
    assert bounded_int(" 60 ", "X-Task-Timeout", low=1, high=300) == 60
    for raw, message in (
        ("²", "X-Task-Timeout must be an integer"),
        ("301", "X-Task-Timeout must be between 1 and 300"),
    ):
        with pytest.raises(InvalidParameters) as refused:
            bounded_int(raw, "X-Task-Timeout", low=1, high=300)
        assert refused.value.param == "X-Task-Timeout" and message in str(refused.value)
    with pytest.raises(InvalidParameters) as refused:
        bounded_int("٣", "Prefer", low=1, high=60, refusal="Prefer: wait must be 1 to 60")
    assert "Prefer: wait must be 1 to 60" in str(refused.value)
