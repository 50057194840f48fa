"""A task's price: the catalog's `price_usd` per `price_unit`, in integer micro-USD rounded up."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from modelport.catalog_spec import MediaModel


def price_micros(model: MediaModel, units: int) -> int:
    """`units` is what the request asks for (images, seconds of video); a `task`-priced model counts one."""
    count = 1 if model.price_unit == "task" else units
    return int((model.price_usd * Decimal(1_000_000) * count).to_integral_value(rounding=ROUND_CEILING))
