"""Cost of a text request from its usage, and the estimate a request holds before it runs.

Prices are USD per million tokens, which is exactly micro-USD per token: cost in micro-USD is
Σ tokens × price, computed in `Decimal` and rounded half-up to a whole micro-USD once per request.
"""

from __future__ import annotations

import logging
from decimal import Decimal

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


def cost_micros(usage: Usage, prices: Prices) -> int:
    """Uncached input × input rate + cache reads × read rate + cache writes × write rate + output × output
    rate. Audio/video/image token counts are inside `input_tokens` and not billed again; reasoning tokens
    are inside `output_tokens`."""
    total = Decimal(usage.uncached_input_tokens) * prices.input + Decimal(usage.output_tokens) * prices.output
    if usage.cache_read_tokens:
        read_rate = prices.cache_read if prices.cache_read is not None else prices.input
        total += Decimal(usage.cache_read_tokens) * read_rate
    if usage.cache_write_tokens:
        write_rate = prices.cache_write if prices.cache_write is not None else prices.input
        total += Decimal(usage.cache_write_tokens) * write_rate
    return _bounded_charge(total)


def plain_cost_micros(input_cost: Decimal, output_tokens: int, prices: Prices) -> int:
    """`cost_micros` of uncached input whose cost is `input_cost` (unrounded micro-USD) and `output_tokens`:
    what a hold estimates (no `Usage` built for it)."""
    return _bounded_charge(input_cost + Decimal(output_tokens) * prices.output)


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
