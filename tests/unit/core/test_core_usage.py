"""Usage conventions: input includes cache reads and writes; breakdowns are informational."""

from __future__ import annotations

import logging
from decimal import Decimal

import pytest

from modelport.billing.pricing import MAX_CHARGE_MICROS, cost_micros
from modelport.catalog_spec import Prices
from modelport.core import Usage
from modelport.core.usage import MAX_TOKENS, as_count


def test_uncached_input_excludes_cache_reads_and_writes() -> None:
    usage = Usage(input_tokens=1000, cache_read_tokens=600, cache_write_tokens=300, output_tokens=5)
    assert usage.uncached_input_tokens == 100
    assert usage.total_tokens == 1005


def test_uncached_never_negative_on_inconsistent_upstream_numbers() -> None:
    assert Usage(input_tokens=10, cache_read_tokens=20).uncached_input_tokens == 0


def test_addition_sums_every_field() -> None:
    a = Usage(
        input_tokens=1,
        output_tokens=2,
        cache_read_tokens=3,
        cache_write_tokens=4,
        reasoning_tokens=5,
        audio_input_tokens=6,
        video_input_tokens=7,
        image_input_tokens=8,
    )
    assert a + a == Usage(
        input_tokens=2,
        output_tokens=4,
        cache_read_tokens=6,
        cache_write_tokens=8,
        reasoning_tokens=10,
        audio_input_tokens=12,
        video_input_tokens=14,
        image_input_tokens=16,
    )


def test_as_count_accepts_only_non_negative_integers() -> None:
    assert [as_count(v) for v in (3, 3.0, None, "3", True, -2, 2.5)] == [3, 3, 0, 0, 0, 0, 0]


def test_counts_above_the_cap_are_clamped_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="modelport.usage"):
        values = [as_count(v) for v in (10**30, 1e30, float("inf"), float("nan"), MAX_TOKENS)]
    assert values == [MAX_TOKENS, MAX_TOKENS, 0, 0, MAX_TOKENS]
    assert len([r for r in caplog.records if "counted as" in r.getMessage()]) == 2


def test_usage_sums_stay_within_the_cap() -> None:
    # Anthropic's input is input + cache reads + cache writes; several calls are added up.
    big = Usage(input_tokens=MAX_TOKENS, output_tokens=MAX_TOKENS)
    total = big + big
    assert (total.input_tokens, total.output_tokens) == (MAX_TOKENS, MAX_TOKENS)
    assert Usage(input_tokens=-4, reasoning_tokens=-1).input_tokens == 0


def test_the_charge_is_bounded_whatever_the_prices() -> None:
    prices = Prices(input=Decimal("1e12"), output=Decimal("1e12"))
    assert cost_micros(Usage(input_tokens=MAX_TOKENS, output_tokens=MAX_TOKENS), prices) == MAX_CHARGE_MICROS
    assert MAX_CHARGE_MICROS < 2**63 // 1000
