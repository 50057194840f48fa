"""A text request's cost and hold estimate (`billing.pricing`), a top-up's tier and a key's hold period."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from decimal import Decimal

import pytest

from modelport.accounts.limits import KeyLimits
from modelport.billing.key_budget import key_hold
from modelport.billing.pricing import (
    CHARS_PER_TOKEN,
    MAX_CHARGE_MICROS,
    MEDIA_PART_CHARS,
    cost_micros,
    estimate_input_tokens,
)
from modelport.billing.topups import qualifying_tier, tier_rank
from modelport.catalog_spec import Prices
from modelport.core.messages import CanonicalRequest, Message
from modelport.core.parts import ImagePart, TextPart, ToolCallPart
from modelport.core.usage import Usage
from modelport.settings import default_tiers


def test_cost_is_tokens_times_price_per_million_rounded_half_up_once() -> None:
    prices = Prices(input=Decimal("0.15"), output=Decimal("0.6"))
    # 1,001 × 0.15 + 3 × 0.6 = 150.15 + 1.8 = 151.95 micro-USD → 152 (rounded once, not per term).
    assert cost_micros(Usage(input_tokens=1_001, output_tokens=3), prices) == 152
    # 0.5 micro-USD rounds up (half-up), 0.49 down.
    assert cost_micros(Usage(input_tokens=5), Prices(input=Decimal("0.1"))) == 1
    assert cost_micros(Usage(input_tokens=49), Prices(input=Decimal("0.01"))) == 0


def test_cache_reads_and_writes_use_their_rates_else_the_input_rate() -> None:
    usage = Usage(input_tokens=1_000, cache_read_tokens=600, cache_write_tokens=100, output_tokens=10)
    with_rates = Prices(input=Decimal(3), output=Decimal(15), cache_read=Decimal("0.3"), cache_write=Decimal("3.75"))
    # uncached 300 × 3 + reads 600 × 0.3 + writes 100 × 3.75 + output 10 × 15
    assert cost_micros(usage, with_rates) == 900 + 180 + 375 + 150
    # Without cache prices every input token is billed at the input rate.
    assert cost_micros(usage, Prices(input=Decimal(3), output=Decimal(15))) == 1_000 * 3 + 150


def test_a_charge_is_clamped_to_the_largest_top_up(caplog: pytest.LogCaptureFixture) -> None:
    huge = Prices(input=Decimal(10) ** 12)
    with caplog.at_level(logging.WARNING, logger="modelport.billing"):
        assert cost_micros(Usage(input_tokens=10**9), huge) == MAX_CHARGE_MICROS
    assert "clamped" in caplog.text


def test_input_estimate_counts_characters_tool_calls_and_media_parts() -> None:
    request = CanonicalRequest(
        model="p/m",
        system=[TextPart(text="s" * 40)],
        messages=[
            Message(role="user", parts=[TextPart(text="u" * 400), ImagePart(url="https://example.com/a.png")]),
            Message(role="assistant", parts=[ToolCallPart(id="c1", name="lookup", arguments='{"q":"x"}')]),
        ],
    )
    chars = 40 + 400 + MEDIA_PART_CHARS + len("lookup") + len('{"q":"x"}')
    assert estimate_input_tokens(request) == chars // CHARS_PER_TOKEN + 16


def test_a_single_top_up_reaches_the_highest_tier_it_qualifies_for() -> None:
    tiers = default_tiers()
    assert qualifying_tier(tiers, 0).name == "free"
    assert qualifying_tier(tiers, 9_999_999).name == "free"  # 9.999999 USD < 10
    assert qualifying_tier(tiers, 10_000_000).name == "tier1"
    assert qualifying_tier(tiers, 100_000_000).name == "tier2"
    assert tier_rank(tiers, "tier1") == 1
    assert tier_rank(tiers, "no such tier") == 0


def test_a_keys_hold_goes_to_the_row_of_its_limit_period() -> None:
    at = int(datetime(2026, 11, 26, 13, 5, tzinfo=UTC).timestamp() * 1000)  # a Thursday
    assert key_hold("key_1", None, at) is None
    assert key_hold("key_1", KeyLimits(), at) is None  # no spend limit: nothing held against the key
    monthly = key_hold("key_1", KeyLimits(spend_limit_micros=5_000_000), at)
    assert monthly is not None
    assert (monthly.key_id, monthly.limit_micros) == ("key_1", 5_000_000)
    assert monthly.period_ms == int(datetime(2026, 11, 1, tzinfo=UTC).timestamp() * 1000)
    weekly = key_hold("key_1", KeyLimits(spend_limit_micros=1, spend_limit_period="week"), at)
    assert weekly is not None
    assert weekly.period_ms == int(datetime(2026, 11, 23, tzinfo=UTC).timestamp() * 1000)  # Monday
