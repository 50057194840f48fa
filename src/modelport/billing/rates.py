"""Which rates a text request is billed at: a model's price tables resolved for one answer.

A model's `prices` is the standard table; `prices.long_context` applies to a request whose total input
(cache reads and writes included) is above its threshold; `prices.service_tiers.priority` / `.flex` apply
when the upstream reports that tier (with their own `long_context` table, else the tier's rates). A rate a
table leaves out is the enclosing table's, except cache rates on an `anthropic` deployment: Anthropic bills
them as fixed multiples of the input rate of the same table (read 0.1×, 5-minute write 1.25×, 1-hour write
2×), so that is what an unset one is. Elsewhere an unset cache rate of the standard table is its input rate.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from enum import StrEnum

from modelport.catalog_spec import LongContextRates, Prices, RateTable, TextModel

log = logging.getLogger("modelport.billing")

# Anthropic's documented multiples of the input rate (prompt caching pricing).
ANTHROPIC_CACHE_READ = Decimal("0.1")
ANTHROPIC_CACHE_WRITE_5M = Decimal("1.25")
ANTHROPIC_CACHE_WRITE_1H = Decimal(2)
_CACHE_FIELDS = ("cache_read", "cache_write", "cache_write_1h")
# The tiers a model may price apart; any other reported tier (`default`, `standard`, `scale`, ...) is standard.
_TIER_TABLES = frozenset({"priority", "flex"})


class PriceTier(StrEnum):
    """The price table a request was billed at (the request log's `price_tier`)."""

    STANDARD = "standard"
    LONG_CONTEXT = "long_context"
    PRIORITY = "priority"
    FLEX = "flex"


@dataclass(frozen=True, slots=True)
class Rates:
    """Micro-USD per token (= USD per million tokens) of each token class."""

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal  # 5-minute
    cache_write_1h: Decimal


def standard_rates(prices: Prices, *, anthropic: bool) -> Rates:
    if anthropic:
        return _derived(prices, prices.input, prices.output)
    return Rates(
        input=prices.input,
        output=prices.output,
        cache_read=_or(prices.cache_read, prices.input),
        cache_write=_or(prices.cache_write, prices.input),
        cache_write_1h=_or(prices.cache_write_1h, prices.input),
    )


def _within(table: RateTable, parent: Rates, *, anthropic: bool) -> Rates:
    """A nested table's rates: what it leaves out is `parent`'s (cache rates on Anthropic: derived)."""
    inp, out = _or(table.input, parent.input), _or(table.output, parent.output)
    if anthropic:
        return _derived(table, inp, out)
    return Rates(
        input=inp,
        output=out,
        cache_read=_or(table.cache_read, parent.cache_read),
        cache_write=_or(table.cache_write, parent.cache_write),
        cache_write_1h=_or(table.cache_write_1h, parent.cache_write_1h),
    )


def _derived(table: RateTable | Prices, inp: Decimal, out: Decimal) -> Rates:
    return Rates(
        input=inp,
        output=out,
        cache_read=_or(table.cache_read, inp * ANTHROPIC_CACHE_READ),
        cache_write=_or(table.cache_write, inp * ANTHROPIC_CACHE_WRITE_5M),
        cache_write_1h=_or(table.cache_write_1h, inp * ANTHROPIC_CACHE_WRITE_1H),
    )


def _or(value: Decimal | None, default: Decimal) -> Decimal:
    return default if value is None else value


def _over(table: LongContextRates, input_tokens: int) -> bool:
    return input_tokens > table.above_input_tokens


def rates_for(
    prices: Prices, *, input_tokens: int, service_tier: str | None, anthropic: bool
) -> tuple[Rates, PriceTier]:
    """The rates of a request with `input_tokens` of total input whose upstream reported `service_tier`
    (unknown or absent: standard), and the table they came from."""
    standard = standard_rates(prices, anthropic=anthropic)
    tiers = prices.service_tiers
    if tiers is not None and service_tier in _TIER_TABLES:
        name = PriceTier(service_tier)
        tier = tiers.priority if name == PriceTier.PRIORITY else tiers.flex
        if tier is not None:
            rates = _within(tier, standard, anthropic=anthropic)
            if tier.long_context is not None and _over(tier.long_context, input_tokens):
                rates = _within(tier.long_context, rates, anthropic=anthropic)
            return rates, name
    if prices.long_context is not None and _over(prices.long_context, input_tokens):
        return _within(prices.long_context, standard, anthropic=anthropic), PriceTier.LONG_CONTEXT
    return standard, PriceTier.STANDARD


def hold_rates(prices: Prices, input_tokens: int) -> tuple[Decimal, Decimal]:
    """Input and output rates a hold assumes for `input_tokens` of estimated input: the long-context ones
    when the estimate is over the threshold (the tier is known only from the answer: standard)."""
    if prices.long_context is not None and _over(prices.long_context, input_tokens):
        table = prices.long_context
        return _or(table.input, prices.input), _or(table.output, prices.output)
    return prices.input, prices.output


def derives_cache_prices(model: TextModel) -> bool:
    """The model has an `anthropic` deployment and leaves a cache rate of some table unset."""
    if not any(d.kind == "anthropic" for d in model.deployments):
        return False
    prices = model.prices
    tables: list[RateTable | Prices] = [prices]
    if prices.long_context is not None:
        tables.append(prices.long_context)
    tiers = prices.service_tiers
    for tier in (tiers.priority, tiers.flex) if tiers is not None else ():
        if tier is not None:
            tables.append(tier)
            if tier.long_context is not None:
                tables.append(tier.long_context)
    return any(getattr(table, name) is None for table in tables for name in _CACHE_FIELDS)


def log_derived_cache_prices(models: Iterable[TextModel]) -> list[str]:
    """Name, in the start-up log, each model whose cache prices are derived from its input rate."""
    derived = sorted(m.id for m in models if derives_cache_prices(m))
    if derived:
        log.info(
            "cache prices derived from the input rate on anthropic deployments (read 0.1x, 5-minute write "
            "1.25x, 1-hour write 2x; set them in the catalog to override): %s",
            ", ".join(derived),
        )
    return derived
