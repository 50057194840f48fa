"""Per-key limits without I/O: UTC periods, field checks, client addresses, model patterns, and the rule
that a key never gives more than it has."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from modelport.accounts.grants import within
from modelport.accounts.key_fields import check_key_fields, fields_from_text, parse_expiry
from modelport.accounts.limits import KeyLimits, limits_from_columns, period_end_ms, period_start_ms
from modelport.errors import InvalidParameters


def ms(year: int, month: int, day: int, hour: int = 0, minute: int = 0) -> int:
    return int(datetime(year, month, day, hour, minute, tzinfo=UTC).timestamp() * 1000)


@pytest.mark.parametrize(
    ("period", "at", "start", "end"),
    [
        ("day", ms(2026, 11, 25, 23, 59), ms(2026, 11, 25), ms(2026, 11, 26)),
        ("week", ms(2026, 11, 25, 12), ms(2026, 11, 23), ms(2026, 11, 30)),  # a Wednesday: from Monday
        ("week", ms(2026, 11, 23), ms(2026, 11, 23), ms(2026, 11, 30)),
        ("week", ms(2026, 11, 22, 23), ms(2026, 11, 16), ms(2026, 11, 23)),  # a Sunday ends the week
        ("month", ms(2026, 12, 31, 23), ms(2026, 12, 1), ms(2027, 1, 1)),
        ("month", ms(2027, 2, 1), ms(2027, 2, 1), ms(2027, 3, 1)),
    ],
)
def test_utc_calendar_periods(period: str, at: int, start: int, end: int) -> None:
    assert period_start_ms(period, at) == start
    assert period_end_ms(period, start) == end


def test_total_never_ends() -> None:
    assert period_start_ms("total", ms(2026, 5, 5)) == 0 and period_end_ms("total", 0) is None


def test_fields_become_columns_and_bad_values_name_their_field() -> None:
    columns = check_key_fields(
        {
            "spend_limit_usd": "1.5",
            "models": [" openai/* "],
            "allowed_ips": ["10.1.2.3/8"],
            "expires_at": 10,
            "rpm": None,
        }
    )
    assert columns == {
        "spend_limit_micros": 1_500_000,
        "models": ["openai/*"],
        "allowed_ips": ["10.0.0.0/8"],
        "expires_at_ms": 10_000,
        "rpm": None,
    }
    for bad, param in (
        ({"spend_limit_usd": "-1"}, "spend_limit_usd"),
        ({"spend_limit_usd": "x"}, "spend_limit_usd"),
        ({"tpm": True}, "tpm"),
        ({"models": []}, "models"),
        ({"allowed_ips": ["nope"]}, "allowed_ips"),
        ({"expires_at": "tomorrow"}, "expires_at"),
        ({"colour": "red"}, "colour"),
    ):
        with pytest.raises(InvalidParameters) as raised:
            check_key_fields(bad)
        assert raised.value.param == param


def test_addresses_and_models() -> None:
    limits = limits_from_columns(
        {
            "spend_limit_micros": None,
            "spend_limit_period": None,
            "models": ["openai/*", "local/sketch-image"],
            "rpm": None,
            "tpm": None,
            "expires_at_ms": 5000,
            "allowed_ips": ["10.0.0.0/8", "2001:db8::/32"],
        }
    )
    assert limits.ip_allowed("10.9.9.9") and limits.ip_allowed("::ffff:10.0.0.1") and limits.ip_allowed("2001:db8::1")
    assert not limits.ip_allowed("127.0.0.1") and not limits.ip_allowed(None) and not limits.ip_allowed("junk")
    assert limits.may_use("openai/gpt-4o") and limits.may_use("local/sketch-image")
    assert not limits.may_use("local/style-transfer") and not limits.may_use("anthropic/claude")
    assert limits.expired(5000) and not limits.expired(4999)


def test_parse_expiry() -> None:
    assert parse_expiry("2027-01-01") == 1798761600
    assert parse_expiry("2027-01-01T01:00:00+01:00") == 1798761600
    assert parse_expiry("1798761600") == 1798761600
    with pytest.raises(InvalidParameters):
        parse_expiry("soon")
    for odd in ("²", "٣", "1798761600²"):  # str.isdigit() is true for each (issue 33 item 5)
        with pytest.raises(InvalidParameters):
            parse_expiry(odd)


def test_text_counts_are_ascii_digits_only() -> None:
    assert fields_from_text({"rpm": "12", "tpm": ""}) == {"rpm": 12, "tpm": None}
    for odd in ("²", "٣", "９", "+5", "5_000"):
        with pytest.raises(InvalidParameters):
            fields_from_text({"rpm": odd})


def test_a_spend_period_is_no_wider_than_the_granters() -> None:
    """The same amount per shorter period is more money over time: total < month < week < day."""
    order = ("total", "month", "week", "day")
    for i, granted in enumerate(order):
        for j, requested in enumerate(order):
            mine = KeyLimits(spend_limit_micros=100, spend_limit_period=granted)
            theirs = KeyLimits(spend_limit_micros=100, spend_limit_period=requested)
            assert within(mine, "admin", theirs, "member") == (None if j <= i else "spend_limit_period")
    # Without a spend limit of its own a key may give any period.
    assert within(KeyLimits(), "admin", KeyLimits(spend_limit_micros=1, spend_limit_period="day"), "member") is None


def test_a_key_never_gives_more_than_it_has() -> None:
    import ipaddress

    mine = KeyLimits(
        spend_limit_micros=100,
        rpm=10,
        models=("openai/*",),
        expires_at_ms=1000,
        allowed_ips=(ipaddress.ip_network("10.0.0.0/8"),),
    )
    ok = KeyLimits(
        spend_limit_micros=50,
        rpm=10,
        models=("openai/gpt-*", "openai/o1"),
        expires_at_ms=999,
        allowed_ips=(ipaddress.ip_network("10.1.0.0/16"),),
    )
    assert within(mine, "admin", ok, "admin") is None
    assert within(mine, "member", ok, "admin") == "role"
    assert within(KeyLimits(), "admin", KeyLimits(), "admin") is None
    for changed, name in (
        ({"spend_limit_micros": None}, "spend_limit_usd"),
        ({"rpm": 11}, "rpm"),
        ({"expires_at_ms": None}, "expires_at"),
        ({"models": ("*",)}, "models"),
        ({"models": ("o[p]enai/*",)}, "models"),
        ({"allowed_ips": (ipaddress.ip_network("0.0.0.0/0"),)}, "allowed_ips"),
        ({"allowed_ips": (ipaddress.ip_network("::/0"),)}, "allowed_ips"),
    ):
        import dataclasses

        assert within(mine, "admin", dataclasses.replace(ok, **changed), "member") == name
