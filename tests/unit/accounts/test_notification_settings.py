"""`accounts.notifications.parse` and the console form's conversion: every field optional, exact money,
a clear error naming the field for anything else."""

from __future__ import annotations

from typing import Any

import pytest

from modelport.accounts.notifications import NotificationSettings, parse
from modelport.console.team.notifications import body_from_form
from modelport.errors import InvalidParameters


def test_every_field_is_optional() -> None:
    assert parse(None) == NotificationSettings()
    assert parse({}) == NotificationSettings()
    assert parse({"url": None, "balance_below_usd": None, "key_spend_percent": None, "key_expiry_days": None}) == (
        NotificationSettings()
    )


def test_a_full_body() -> None:
    found = parse(
        {
            "url": " https://x.example/h ",
            "balance_below_usd": "5.00",
            "key_spend_percent": [100, 80],
            "key_expiry_days": 7,
        }
    )
    assert found == NotificationSettings("https://x.example/h", 5_000_000, (80, 100), 7)
    assert found.to_public()["key_spend_percent"] == [80, 100]
    assert parse({"balance_below_usd": 3}).balance_below_micros == 3_000_000  # an integer is exact too


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ("x", "body"),
        ({"nope": 1}, "nope"),
        ({"url": ""}, "url"),
        ({"url": "https://x/" + "a" * 2048}, "url"),
        ({"balance_below_usd": 1.5}, "balance_below_usd"),
        ({"balance_below_usd": True}, "balance_below_usd"),
        ({"balance_below_usd": "NaN"}, "balance_below_usd"),
        ({"balance_below_usd": "1e400"}, "balance_below_usd"),
        ({"balance_below_usd": "2000000000000"}, "balance_below_usd"),
        ({"key_spend_percent": [50.5]}, "key_spend_percent"),
        ({"key_spend_percent": {"a": 1}}, "key_spend_percent"),
        ({"key_expiry_days": 1.0}, "key_expiry_days"),
        ({"key_expiry_days": -1}, "key_expiry_days"),
    ],
)
def test_bad_values_name_their_field(body: Any, param: str) -> None:
    with pytest.raises(InvalidParameters) as caught:
        parse(body)
    assert caught.value.param == param


def test_the_console_form_becomes_the_api_body() -> None:
    assert body_from_form({"url": "", "balance_below_usd": "", "key_spend_percent": "", "key_expiry_days": ""}) == {
        "url": None,
        "balance_below_usd": None,
        "key_spend_percent": None,
        "key_expiry_days": None,
    }
    form = {
        "url": "https://x.example",
        "balance_below_usd": "2.5",
        "key_spend_percent": "80, 100,",
        "key_expiry_days": "7",
    }
    assert parse(body_from_form(form)) == NotificationSettings("https://x.example", 2_500_000, (80, 100), 7)
    for field, value in (("key_spend_percent", "80, -1"), ("key_spend_percent", "x"), ("key_expiry_days", "7d")):
        with pytest.raises(InvalidParameters) as caught:
            body_from_form({field: value})
        assert caught.value.param == field
