"""The console's small pure helpers: where sign-in may send a browser, CSV cells, page cursors, chart series."""

from __future__ import annotations

import pytest
from starlette.requests import Request

from modelport.console.charts import DAY_S, daily
from modelport.console.forms import csv_cell, cursor
from modelport.console.signin import safe_next
from modelport.errors import InvalidParameters


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/logs?model=x", "/logs?model=x"),
        ("/", "/"),
        ("//evil.example/x", "/"),
        ("https://evil.example/", "/"),
        ("/\\evil.example", "/"),
        ("", "/"),
        (None, "/"),
    ],
)
def test_sign_in_only_returns_to_console_paths(raw: object, expected: str) -> None:
    assert safe_next(raw, "/") == expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [("=HYPERLINK(1)", "'=HYPERLINK(1)"), ("+1", "'+1"), ("-x", "'-x"), ("@a", "'@a"), ("ok", "ok"), (-5, -5)],
)
def test_csv_cells_never_start_a_formula(value: object, expected: object) -> None:
    assert csv_cell(value) == expected


def request_with(query: str) -> Request:
    return Request({"type": "http", "method": "GET", "path": "/", "query_string": query.encode(), "headers": []})


def test_page_cursor() -> None:
    assert cursor(request_with("before=1700000000000~req_abc")) == (1_700_000_000_000, "req_abc")
    assert cursor(request_with("")) is None
    for bad in ("before=x", "before=12", "before=~req", "before=12~" + "x" * 65, "before=-1~a"):
        with pytest.raises(InvalidParameters):
            cursor(request_with(bad))


def test_daily_series_keep_the_largest_and_sum_the_rest() -> None:
    rows = [(day, f"m{i}", float(i + 1)) for i in range(8) for day in (10, 12)]
    spec = daily(10, 12, rows, day=lambda r: r[0], label=lambda r: r[1], value=lambda r: r[2], unit="usd", top=3)
    assert spec["x"] == [10 * DAY_S, 11 * DAY_S, 12 * DAY_S]
    assert [s["label"] for s in spec["series"]] == ["m7", "m6", "m5", "other (5)"]
    assert spec["series"][0]["values"] == [8.0, 0.0, 8.0]  # the empty day is a zero, not a gap
    assert spec["series"][-1]["values"] == [15.0, 0.0, 15.0]  # 1 + 2 + 3 + 4 + 5
    empty = daily(10, 12, [], day=lambda r: r, label=str, value=float, unit="usd")
    assert empty["x"] == [] and empty["series"] == []
