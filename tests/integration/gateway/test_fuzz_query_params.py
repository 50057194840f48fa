"""Structure-aware fuzzing of the integer query parameters of both hosts and the console (issue 21 item 7):
numbers in every spelling a client may send (Unicode digits such as `²` and `٣` that pass `str.isdigit()`,
doubled signs, underscores, spaces, exponents, huge values) in every parameter that takes one. Whatever the
value, the answer is not a 5xx, is in the host's shape (JSON envelope, text-gateway error, console HTML),
and the same keep-alive connection answers the next request. schemathesis covers the declared ones too
(`test_fuzz_openapi.py`: `GET /api/v1/tasks` declares its query parameters). MODELPORT_FUZZ_EXAMPLES bounds
the example count, as in the other fuzz tests.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings

from tests.integration.gateway.conftest import ADMIN_TOKEN, Gateway
from tests.support.console import ConsoleClient
from tests.support.odd_numbers import number_like

EXAMPLES = int(os.environ.get("MODELPORT_FUZZ_EXAMPLES", "15"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)

# (path, parameter, other parameters): {v} is replaced by the fuzzed value.
MEDIA = [
    ("/api/v1/tasks", "page", {}),
    ("/api/v1/tasks", "page_size", {}),
    ("/api/v1/tasks", "start_time", {}),
    ("/api/v1/tasks", "end_time", {"start_time": "1"}),
    ("/api/v1/media/files", "limit", {}),
    ("/api/v1/media/files", "offset", {}),
    ("/api/v1/media/providers/vendorA/assets", "limit", {}),
    ("/files/file_abc", "expires", {"signature": "x"}),
]
TEXT = ["page", "page_size", "start_time", "end_time"]
TEAM_PAGES = [
    ("/tasks", "page", "{v}"),
    ("/assets", "page", "{v}"),
    ("/billing", "before", "{v}"),
    ("/logs", "before", "{v}~req_x"),
    ("/logs-tail", "after", "{v}~req_x"),
]
OPERATOR_PAGES = [("/admin/logs", "before", "{v}:req_x"), ("/admin/tasks", "before", "{v}:task_x")]


def check_api(client: httpx.Client, path: str, params: dict[str, str], host: str) -> None:
    r = client.get(path, params=params)
    assert r.status_code < 500, (path, params, r.status_code, r.text[:300])
    assert r.status_code in (200, 400, 404), (path, params, r.status_code, r.text[:300])
    if r.status_code != 200:
        body = r.json()
        if host == "media":
            assert body["code"] == r.status_code and isinstance(body["message"], str), body
        else:
            assert isinstance(body["error"]["message"], str), body
    assert client.get("/healthz").status_code == 200  # the connection is still usable


def check_page(client: ConsoleClient, path: str, params: dict[str, str], home: str) -> None:
    r = client.get(path, params=params, timeout=30)
    assert r.status_code in (200, 400), (path, params, r.status_code, r.text[:300])
    if r.status_code == 400:
        assert r.headers["content-type"].startswith("text/html"), r.headers
    assert client.get(home).status_code == 200


@pytest.fixture(scope="module")
def consoles(gateway: Gateway) -> Iterator[tuple[ConsoleClient, ConsoleClient]]:
    team, operator = ConsoleClient(gateway.server.media_url), ConsoleClient(gateway.server.media_url)
    assert team.sign_in(gateway.key).status_code == 303
    assert operator.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
    yield team, operator
    team.close()
    operator.close()


def test_api_integer_query_parameters_never_get_a_5xx(gw: Gateway) -> None:
    headers = {"Authorization": f"Bearer {gw.key}"}
    now = str(int(time.time()))
    with (
        httpx.Client(base_url=gw.server.media_url, headers=headers, timeout=30) as media,
        httpx.Client(base_url=gw.server.text_url, headers=headers, timeout=30) as text,
    ):

        @given(value=number_like)
        @example("²")
        @example("--5")
        @example("٣")
        @FUZZ
        def run(value: str) -> None:
            for path, name, others in MEDIA:
                check_api(media, path, {**others, name: value}, "media")
            for name in TEXT:
                window = {"start_time": str(int(now) - 3600), "end_time": now}
                check_api(text, "/v1/logs", {**window, name: value}, "text")

        run()


def test_console_integer_query_parameters_never_get_a_5xx(
    gw: Gateway, consoles: tuple[ConsoleClient, ConsoleClient]
) -> None:
    team, operator = consoles
    team_id = gw.admin("GET", "/teams").json()["data"]["teams"][0]["id"]

    @given(value=number_like.filter(lambda v: plain_digits(v) is False))
    @example("²")
    @example("--5")
    @example("٣")
    @FUZZ
    def run(value: str) -> None:
        for path, name, shape in TEAM_PAGES:
            check_page(team, path, {name: shape.format(v=value)}, "/")
        for path, name, shape in [*OPERATOR_PAGES, (f"/admin/teams/{team_id}", "before_id", "{v}")]:
            check_page(operator, path, {name: shape.format(v=value)}, "/admin/")

    run()


def plain_digits(value: str) -> bool:
    """A well-formed cursor would make `/logs-tail` stream for minutes: the console run sends malformed ones."""
    return value.strip().isascii() and value.strip().lstrip("-").isdigit()
