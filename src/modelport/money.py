"""Money: integer micro-USD inside, `Decimal` at the edges, never float.

1 USD = 1,000,000 micro-USD. Balances are shown with 4 decimal places.
"""

from __future__ import annotations

from decimal import ROUND_DOWN, ROUND_HALF_UP, Decimal, InvalidOperation

MICROS_PER_USD = 1_000_000
_FOUR_PLACES = Decimal("0.0001")
# Bounds on money that comes in from outside. Columns are signed 64-bit micro-USD (max ~9.2e18, i.e.
# 9.2e12 USD): a single top-up is at most 1e9 USD and a balance at most 1e12 USD, so no sum of a balance,
# a top-up and the frozen money can leave 64 bits (on SQLite that would turn the balance into a float).
MAX_TOPUP_USD = 1_000_000_000
MAX_BALANCE_MICROS = 1_000_000_000_000 * MICROS_PER_USD


def usd_to_micros(amount: Decimal | str | int) -> int:
    """Exact conversion; rejects amounts finer than a micro-USD rather than rounding money silently."""
    try:
        value = Decimal(amount)
    except (InvalidOperation, ValueError) as exc:
        raise ValueError(f"not a decimal amount: {amount!r}") from exc
    if not value.is_finite():
        raise ValueError(f"not a finite amount: {amount!r}")
    try:
        micros = value * MICROS_PER_USD
    except ArithmeticError as exc:  # an exponent past what Decimal's context allows
        raise ValueError(f"amount {amount} is out of range") from exc
    if micros != micros.to_integral_value():
        raise ValueError(f"amount {amount} has more precision than 1 micro-USD")
    return int(micros)


def micros_to_usd(micros: int) -> Decimal:
    return Decimal(micros) / MICROS_PER_USD


def display_usd(micros: int) -> Decimal:
    """Four decimal places, rounded towards zero so a shown balance never overstates what is there."""
    return micros_to_usd(micros).quantize(_FOUR_PLACES, rounding=ROUND_DOWN)


def round_micros(value: Decimal) -> int:
    """Round a computed cost (fractional micro-USD) to a whole micro-USD, half up."""
    return int(value.to_integral_value(rounding=ROUND_HALF_UP))
