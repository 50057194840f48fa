"""Which rates a request is billed at (`billing.rates`) and the cost they give (`billing.pricing`): cache
writes by lifetime, Anthropic's derived cache rates, long-context and service-tier tables; with property
tests of the monotonicity a bill must have and of translated == native."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from modelport.billing.pricing import cost_micros, price_usage
from modelport.billing.rates import PriceTier, derives_cache_prices, hold_rates, log_derived_cache_prices, rates_for
from modelport.catalog_spec import Prices, TextModel
from modelport.core.usage import Usage
from modelport.protocols.anthropic_messages.usage import usage_from_wire as messages_usage
from modelport.protocols.anthropic_messages.usage import usage_to_wire as messages_wire
from modelport.protocols.openai_chat.usage import usage_from_wire as chat_usage
from modelport.protocols.openai_chat.usage import usage_to_wire as chat_wire

SONNET = Prices.model_validate(
    {"input": "3", "output": "15", "long_context": {"above_input_tokens": 200_000, "input": "6", "output": "22.5"}}
)
GPT = Prices.model_validate(
    {
        "input": "1.25",
        "output": "10",
        "cache_read": "0.125",
        "long_context": {"above_input_tokens": 272_000, "input": "2.5", "output": "15", "cache_read": "0.25"},
        "service_tiers": {
            "priority": {
                "input": "2.5",
                "output": "20",
                "cache_read": "0.25",
                "long_context": {"above_input_tokens": 272_000, "input": "5", "output": "30"},
            },
            "flex": {"input": "0.625", "output": "5"},
        },
    }
)


def test_anthropic_cache_rates_derive_from_the_input_rate_of_each_table() -> None:
    standard, tier = rates_for(SONNET, input_tokens=1000, service_tier="standard", anthropic=True)
    assert tier == PriceTier.STANDARD
    assert (standard.cache_read, standard.cache_write, standard.cache_write_1h) == (
        Decimal("0.3"),
        Decimal("3.75"),
        Decimal(6),
    )
    long, tier = rates_for(SONNET, input_tokens=200_001, service_tier=None, anthropic=True)
    assert tier == PriceTier.LONG_CONTEXT
    assert (long.input, long.output, long.cache_read, long.cache_write, long.cache_write_1h) == (
        Decimal(6),
        Decimal("22.5"),
        Decimal("0.6"),
        Decimal("7.5"),
        Decimal(12),
    )


def test_elsewhere_an_unset_cache_rate_is_the_input_rate_and_a_set_one_wins() -> None:
    rates, _ = rates_for(SONNET, input_tokens=10, service_tier=None, anthropic=False)
    assert rates.cache_read == rates.cache_write == rates.cache_write_1h == Decimal(3)
    explicit = Prices(input=Decimal(3), cache_read=Decimal("0.25"), cache_write_1h=Decimal(5))
    rates, _ = rates_for(explicit, input_tokens=10, service_tier=None, anthropic=True)
    assert (rates.cache_read, rates.cache_write, rates.cache_write_1h) == (Decimal("0.25"), Decimal("3.75"), Decimal(5))


def test_one_hour_writes_cost_their_own_rate() -> None:
    usage = Usage(
        input_tokens=14_050,
        cache_read_tokens=10_000,
        cache_write_tokens=4000,
        cache_write_1h_tokens=3000,
        output_tokens=800,
    )
    # 50 × 3 + 10,000 × 0.3 + 1,000 × 3.75 + 3,000 × 6 + 800 × 15
    assert cost_micros(usage, SONNET, anthropic=True) == 150 + 3000 + 3750 + 18_000 + 12_000


def test_the_threshold_counts_cache_reads_and_writes_and_is_exclusive() -> None:
    at = Usage(input_tokens=200_000, cache_read_tokens=150_000, cache_write_tokens=49_000, output_tokens=1)
    over = Usage(input_tokens=200_001, cache_read_tokens=150_000, cache_write_tokens=49_000, output_tokens=1)
    assert price_usage(at, SONNET, anthropic=True).tier == PriceTier.STANDARD
    assert price_usage(over, SONNET, anthropic=True).tier == PriceTier.LONG_CONTEXT


def test_service_tiers_come_from_the_answer_and_fall_back_to_standard() -> None:
    usage = Usage(input_tokens=1000, cache_read_tokens=200, output_tokens=100)
    for reported, tier, cost in [
        ("priority", PriceTier.PRIORITY, 800 * Decimal("2.5") + 200 * Decimal("0.25") + 100 * 20),
        # flex leaves cache_read out: the standard table's.
        ("flex", PriceTier.FLEX, 800 * Decimal("0.625") + 200 * Decimal("0.125") + 100 * 5),
        ("default", PriceTier.STANDARD, 800 * Decimal("1.25") + 200 * Decimal("0.125") + 100 * 10),
        ("scale", PriceTier.STANDARD, 800 * Decimal("1.25") + 200 * Decimal("0.125") + 100 * 10),
        (None, PriceTier.STANDARD, 800 * Decimal("1.25") + 200 * Decimal("0.125") + 100 * 10),
    ]:
        priced = price_usage(replace(usage, service_tier=reported), GPT)
        assert (priced.tier, priced.cost_micros) == (tier, round(cost)), reported
    # A tier the model has no table for is billed (and logged) as standard.
    assert price_usage(Usage(input_tokens=1, service_tier="priority"), SONNET).tier == PriceTier.STANDARD


def test_a_tier_over_the_threshold_uses_its_own_long_context_table_else_its_rates() -> None:
    big = Usage(input_tokens=300_000, cache_read_tokens=100_000, output_tokens=100, service_tier="priority")
    # priority.long_context leaves cache_read out: the priority table's (0.25).
    assert price_usage(big, GPT).cost_micros == 200_000 * 5 + 100_000 * Decimal("0.25") + 100 * 30
    flex = Usage(input_tokens=300_000, output_tokens=100, service_tier="flex")
    assert price_usage(flex, GPT) == price_usage(
        Usage(input_tokens=300_000, output_tokens=100, service_tier="flex"), GPT
    )
    assert price_usage(flex, GPT).cost_micros == 300_000 * Decimal("0.625") + 100 * 5


def test_a_hold_over_the_threshold_uses_the_long_context_rates() -> None:
    assert hold_rates(SONNET, 200_000) == (Decimal(3), Decimal(15))
    assert hold_rates(SONNET, 200_001) == (Decimal(6), Decimal("22.5"))
    assert hold_rates(Prices(input=Decimal(1)), 10**9) == (Decimal(1), Decimal(0))


def test_the_start_up_log_names_models_whose_cache_prices_are_derived(caplog: pytest.LogCaptureFixture) -> None:
    def model(model_id: str, kind: str, prices: Mapping[str, object]) -> TextModel:
        return TextModel.model_validate(
            {"id": model_id, "prices": prices, "deployments": [{"kind": kind, "model": "m"}]}
        )

    stated = {"input": "3", "cache_read": "0.3", "cache_write": "3.75", "cache_write_1h": "6"}
    models = [
        model("a/derived", "anthropic", {"input": "3"}),
        model("a/stated", "anthropic", stated),
        model("a/long-derived", "anthropic", {**stated, "long_context": {"input": "6"}}),
        model("o/openai", "openai_chat", {"input": "3"}),
    ]
    assert not derives_cache_prices(models[1])
    with caplog.at_level(logging.INFO, logger="modelport.billing"):
        assert log_derived_cache_prices(models) == ["a/derived", "a/long-derived"]
    assert "a/derived, a/long-derived" in caplog.text


def test_the_built_in_catalog_states_every_price() -> None:
    from modelport.catalog import load_catalog_file

    for text in load_catalog_file(None).text_models:
        prices = text.prices
        assert None not in (prices.cache_read, prices.cache_write, prices.cache_write_1h), text.id


counts = st.integers(min_value=0, max_value=400_000)
tiers = st.sampled_from([None, "standard", "default", "priority", "flex", "scale"])


@st.composite
def usages(draw: st.DrawFn) -> Usage:
    read, write, uncached = draw(counts), draw(counts), draw(counts)
    return Usage(
        input_tokens=read + write + uncached,
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_1h_tokens=draw(st.integers(min_value=0, max_value=write)),
        output_tokens=draw(counts),
        service_tier=draw(tiers),
    )


@given(usages(), st.sampled_from(["uncached", "read", "write", "write_1h", "output"]))
def test_one_more_token_of_any_class_never_costs_less(usage: Usage, kind: str) -> None:
    """With these tables every rate of a table is at least that of the table below the threshold: crossing
    it, or adding a token of any class, can only raise the bill."""
    read, write, write_1h, output = (
        usage.cache_read_tokens,
        usage.cache_write_tokens,
        usage.cache_write_1h_tokens,
        usage.output_tokens,
    )
    if kind == "read":
        read += 1
    elif kind in ("write", "write_1h"):
        write += 1
        write_1h += kind == "write_1h"
    elif kind == "output":
        output += 1
    more = replace(
        usage,
        input_tokens=usage.input_tokens + (kind != "output"),
        cache_read_tokens=read,
        cache_write_tokens=write,
        cache_write_1h_tokens=write_1h,
        output_tokens=output,
    )
    for prices, anthropic in ((SONNET, True), (GPT, False)):
        assert cost_micros(more, prices, anthropic=anthropic) >= cost_micros(usage, prices, anthropic=anthropic)


@given(usages())
def test_priority_costs_at_least_standard_and_flex_at_most(usage: Usage) -> None:
    def cost(tier: str | None) -> int:
        return cost_micros(replace(usage, service_tier=tier), GPT)

    assert cost("flex") <= cost(None) <= cost("priority")


@given(usages())
def test_the_same_tokens_cost_the_same_reported_by_either_protocol(usage: Usage) -> None:
    """Anthropic's `input_tokens` excludes cache reads and writes, OpenAI's `prompt_tokens` includes them:
    once read, the same tokens are the same usage and the same bill (so a translated request is billed
    as a native one)."""
    plain = replace(usage, cache_write_1h_tokens=0)
    anthropic_wire = {
        "input_tokens": plain.uncached_input_tokens,
        "cache_creation_input_tokens": plain.cache_write_tokens,
        "cache_read_input_tokens": plain.cache_read_tokens,
        "output_tokens": plain.output_tokens,
        "service_tier": plain.service_tier,
    }
    openai_wire = {
        "prompt_tokens": plain.input_tokens,
        "completion_tokens": plain.output_tokens,
        "prompt_tokens_details": {
            "cached_tokens": plain.cache_read_tokens,
            "cache_write_tokens": plain.cache_write_tokens,
        },
    }
    from_anthropic = messages_usage(anthropic_wire)
    from_openai = chat_usage(openai_wire, plain.service_tier)
    assert from_anthropic is not None and from_openai is not None
    for prices, anthropic in ((SONNET, True), (GPT, False), (GPT, True)):
        native = cost_micros(from_anthropic, prices, anthropic=anthropic)
        assert (
            native
            == cost_micros(from_openai, prices, anthropic=anthropic)
            == cost_micros(plain, prices, anthropic=anthropic)
        )


@given(usages())
def test_the_messages_wire_form_keeps_the_one_hour_share(usage: Usage) -> None:
    """What a Messages client is sent reads back as the same usage (the breakdown written and read)."""
    wire = messages_wire(usage)
    assert wire["cache_creation"]["ephemeral_1h_input_tokens"] == usage.cache_write_1h_tokens
    again = messages_usage({**wire, "service_tier": usage.service_tier})
    assert again == usage
    # Chat has no 1-hour share: its clients see every write inside their prompt tokens.
    chat = chat_usage(chat_wire(usage), usage.service_tier)
    assert chat is not None and chat.input_tokens == usage.input_tokens
    assert chat.cache_write_tokens == usage.cache_write_tokens
