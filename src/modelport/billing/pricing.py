"""Cost of a text request from its usage, and the estimate a request holds before it runs.

Prices are USD per million tokens, which is exactly micro-USD per token: cost in micro-USD is
Σ tokens × rate per token class, computed in `Decimal` and rounded half-up to a whole micro-USD once per
request. Which table's rates apply: `billing.rates`.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal

from modelport.billing.rates import PriceTier, rates_for
from modelport.catalog_spec import Prices
from modelport.core.messages import CanonicalRequest
from modelport.core.parts import TextPart, ToolCallPart, ToolResultPart
from modelport.core.usage import Usage
from modelport.money import MAX_TOPUP_USD, MICROS_PER_USD, round_micros

log = logging.getLogger("modelport.billing")

# A non-text input part (image, file, audio) counts as this many characters in the hold estimate.
MEDIA_PART_CHARS = 6_000
CHARS_PER_TOKEN = 4
# One request never costs more than the largest top-up. Token counts are bounded (`core.usage.MAX_TOKENS`)
# but catalog prices are not, so the charge is bounded too: the ledger's columns are signed 64-bit.
MAX_CHARGE_MICROS = MAX_TOPUP_USD * MICROS_PER_USD


@dataclass(frozen=True, slots=True)
class Priced:
    cost_micros: int
    tier: PriceTier  # the price table applied


def price_usage(usage: Usage, prices: Prices, *, anthropic: bool = False) -> Priced:
    """Σ tokens × rate per class at the rates of the table the request falls in (`rates.rates_for`):
    uncached input, cache reads, 5-minute cache writes, 1-hour cache writes, output. Audio/video/image
    token counts are inside `input_tokens` and not billed again; reasoning tokens are inside
    `output_tokens`. `anthropic`: an `anthropic` deployment answered (unset cache rates are derived)."""
    rates, tier = rates_for(
        prices, input_tokens=usage.input_tokens, service_tier=usage.service_tier, anthropic=anthropic
    )
    total = Decimal(usage.uncached_input_tokens) * rates.input + Decimal(usage.output_tokens) * rates.output
    if usage.cache_read_tokens:
        total += Decimal(usage.cache_read_tokens) * rates.cache_read
    if usage.cache_write_tokens:
        total += Decimal(usage.cache_write_5m_tokens) * rates.cache_write
        total += Decimal(usage.cache_write_1h_tokens) * rates.cache_write_1h
    return Priced(_bounded_charge(total), tier)


def cost_micros(usage: Usage, prices: Prices, *, anthropic: bool = False) -> int:
    """`price_usage`'s cost alone."""
    return price_usage(usage, prices, anthropic=anthropic).cost_micros


def plain_cost_micros(input_cost: Decimal, output_tokens: int, output_rate: Decimal) -> int:
    """The cost of uncached input whose cost is `input_cost` (unrounded micro-USD) and `output_tokens` at
    `output_rate`: what a hold estimates (no `Usage` built for it)."""
    return _bounded_charge(input_cost + Decimal(output_tokens) * output_rate)


def _bounded_charge(total: Decimal) -> int:
    cost = round_micros(total)
    if cost > MAX_CHARGE_MICROS:
        log.warning("a request's cost of %d micro-USD is clamped to %d", cost, MAX_CHARGE_MICROS)
        return MAX_CHARGE_MICROS
    return cost


def estimate_input_tokens(request: CanonicalRequest) -> int:
    chars = sum(len(p.text) for p in request.system)
    for message in request.messages:
        for part in message.parts:
            if isinstance(part, TextPart):
                chars += len(part.text)
            elif isinstance(part, ToolCallPart):
                chars += len(part.name) + len(part.arguments)
            elif isinstance(part, ToolResultPart):
                content = part.content
                chars += len(content) if isinstance(content, str) else MEDIA_PART_CHARS * max(1, len(content))
            else:
                chars += MEDIA_PART_CHARS
    for tool in request.tools:
        chars += len(tool.name) + len(tool.description or "") + len(str(tool.parameters or ""))
    return chars // CHARS_PER_TOKEN + 16
