"""The `GET /v1/logs` query rules, one violation at a time."""

from __future__ import annotations

import pytest

from modelport.errors import InvalidParameters
from modelport.requestlog.params import LogQuery, parse_log_query

GOOD = {"start_time": "1700000000", "end_time": "1700003600"}
DAY = 86_400


def parse(**overrides: str | None) -> LogQuery:
    args: dict[str, str | None] = {**GOOD, **overrides}
    return parse_log_query(**args)


def test_defaults_and_window_in_milliseconds() -> None:
    q = parse()
    assert (q.page, q.page_size, q.svc_user_id, q.offset) == (1, 10, None, 0)
    # Inclusive on the seconds scale: every millisecond of the end second is inside.
    assert (q.lo_ms, q.hi_ms) == (1_700_000_000_000, 1_700_003_601_000)
    q = parse(page="3", page_size="100", svc_user_id="user-0001_x")
    assert (q.page, q.page_size, q.offset, q.svc_user_id) == (3, 100, 200, "user-0001_x")


def test_thirty_days_exactly_is_allowed() -> None:
    q = parse(end_time=str(1_700_000_000 + 30 * DAY))
    assert q.end_time - q.start_time == 30 * DAY


@pytest.mark.parametrize(
    ("overrides", "param"),
    [
        ({"start_time": None}, "start_time"),
        ({"end_time": None}, "end_time"),
        ({"start_time": ""}, "start_time"),
        ({"start_time": "abc"}, "start_time"),
        ({"start_time": "-5"}, "start_time"),
        ({"start_time": "1.5"}, "start_time"),
        ({"start_time": "17000\n"}, "start_time"),
        ({"start_time": "99999999999999999999"}, "start_time"),
        ({"end_time": "1e9"}, "end_time"),
        ({"end_time": "1700000000"}, "end_time"),  # equal to start_time
        ({"end_time": "1699999999"}, "end_time"),  # before start_time
        ({"end_time": str(1_700_000_000 + 30 * DAY + 1)}, "end_time"),  # span over 30 days
        ({"svc_user_id": "short"}, "svc_user_id"),
        ({"svc_user_id": "x" * 129}, "svc_user_id"),
        ({"svc_user_id": "has space1"}, "svc_user_id"),
        ({"svc_user_id": "user.0001"}, "svc_user_id"),
        ({"svc_user_id": "usér0001"}, "svc_user_id"),
        ({"svc_user_id": "user0001\n"}, "svc_user_id"),
        ({"page": "0"}, "page"),
        ({"page": "-1"}, "page"),
        ({"page": "two"}, "page"),
        ({"page": ""}, "page"),
        ({"page_size": "0"}, "page_size"),
        ({"page_size": "101"}, "page_size"),
        ({"page_size": "ten"}, "page_size"),
    ],
)
def test_each_violation_names_its_parameter(overrides: dict[str, str | None], param: str) -> None:
    with pytest.raises(InvalidParameters) as caught:
        parse(**overrides)
    assert caught.value.param == param
    assert param in caught.value.text_message
    assert caught.value.status == 400
    assert caught.value.error_type == "invalid_request_error"
