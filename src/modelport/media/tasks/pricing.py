"""A task's price: the catalog's `price_usd` per `price_unit`, in integer micro-USD rounded up."""

from __future__ import annotations

from decimal import ROUND_CEILING, Decimal

from modelport.catalog_spec import MediaModel


def price_micros(model: MediaModel, units: int) -> int:
    """`units` is what the request asks for (images, seconds of video, characters); a `task`-priced model
    counts one."""
    count = Decimal(1 if model.price_unit == "task" else units)
    if model.price_unit == "1k_characters":
        count /= 1000
    return int((model.price_usd * Decimal(1_000_000) * count).to_integral_value(rounding=ROUND_CEILING))
