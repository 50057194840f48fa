"""A request's cache controls, the team modes and what a hit costs."""

from __future__ import annotations

from decimal import Decimal

import pytest

from modelport.errors import InvalidParameters
from modelport.response_cache.controls import CacheMode, Use, check_mode, read_controls
from modelport.response_cache.entry import Entry
from modelport.response_cache.service import ResponseCache
from modelport.settings import CacheSettings


def _controls(*headers: tuple[str, str]) -> tuple[Use, int]:
    found = read_controls([(k.lower().encode(), v.encode()) for k, v in headers], 3600, 86_400)
    return found.use, found.ttl_seconds


@pytest.mark.parametrize(
    ("headers", "use"),
    [
        ((), Use.USE),
        ((("X-Modelport-Cache", "use"),), Use.USE),
        ((("X-Modelport-Cache", "SKIP"),), Use.SKIP),
        ((("X-Modelport-Cache", "refresh"),), Use.REFRESH),
        ((("Cache-Control", "no-store"),), Use.SKIP),
        ((("Cache-Control", "no-cache"),), Use.REFRESH),
        ((("Cache-Control", "max-age=0, no-cache"),), Use.REFRESH),
        ((("Cache-Control", "no-cache, no-store"),), Use.SKIP),
        ((("Cache-Control", "no-store"), ("X-Modelport-Cache", "use")), Use.USE),  # the explicit one wins
        ((("Cache-Control", "max-age=60"),), Use.USE),
    ],
)
def test_the_request_controls(headers: tuple[tuple[str, str], ...], use: Use) -> None:
    assert _controls(*headers)[0] == use


def test_the_ttl_is_capped_and_checked() -> None:
    assert _controls()[1] == 3600
    assert _controls(("X-Modelport-Cache-TTL", "5"))[1] == 5
    assert _controls(("X-Modelport-Cache-TTL", "999999999"))[1] == 86_400
    for bad in ("0", "-1", "1.5", "soon", "²"):
        with pytest.raises(InvalidParameters):
            _controls(("X-Modelport-Cache-TTL", bad))
    with pytest.raises(InvalidParameters):
        _controls(("X-Modelport-Cache", "always"))


def test_the_team_modes() -> None:
    assert [check_mode(v) for v in ("off", "Team", " key ")] == [CacheMode.OFF, CacheMode.TEAM, CacheMode.KEY]
    with pytest.raises(InvalidParameters):
        check_mode("on")


class _NoStore:
    pass


@pytest.mark.parametrize(
    ("share", "original", "billed"),
    [("0", 1000, 0), ("0.5", 1000, 500), ("0.5", 3, 2), ("1", 1234, 1234), ("0.1", 0, 0), ("0.333", 10, 3)],
)
def test_a_hit_costs_its_share_of_the_original(share: str, original: int, billed: int) -> None:
    cache = ResponseCache(_NoStore(), CacheSettings(hit_price_share=Decimal(share)))  # type: ignore[arg-type]
    assert cache.hit_cost(Entry({}, original, 0, 1)) == billed


def test_an_entry_round_trips_and_junk_is_none() -> None:
    entry = Entry({"id": "x", "n": [1, 2]}, 17, 1000, 2000)
    assert Entry.loads(entry.dumps()) == entry
    assert Entry.loads(b"not json") is None
    assert Entry.loads(b'{"b": {}}') is None
