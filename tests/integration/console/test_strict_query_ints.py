"""Numbers that pass `str.isdigit()` but not `int()` (`²`, `--5`, `٣`) are a 400 in the host's shape (an
HTML error page in the console), never a 500, and the connection stays usable (issue 21 item 7)."""

from __future__ import annotations

import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.console.conftest import ADMIN_TOKEN, ConsoleServer, Team
from tests.support.console import ConsoleClient

ODD = ["²", "--5", "٣", "1²", "+5", " 7_0"]


@pytest.fixture(scope="module")
def team(console_server: ConsoleServer) -> Team:
    return console_server.team("strict-ints")


def assert_400_then_usable(
    client: httpx.Client, path: str, params: dict[str, str], *, html: bool, then: str = "/healthz"
) -> None:
    r = client.get(path, params=params)
    assert r.status_code == 400, (path, params, r.status_code, r.text[:300])
    if html:
        assert r.headers["content-type"].startswith("text/html"), r.headers
    else:
        assert "integer" in str(r.json()), r.text
    # The same keep-alive connection answers the next request.
    assert client.get(then).status_code == 200


@pytest.mark.parametrize("odd", ODD)
def test_api_query_integers_are_400(console_server: ConsoleServer, team: Team, odd: str) -> None:
    headers = {"Authorization": f"Bearer {team.key}"}
    now = int(time.time())
    with httpx.Client(base_url=console_server.media_url, headers=headers, timeout=30) as media:
        for name in ("page", "page_size", "start_time", "end_time"):
            assert_400_then_usable(media, "/api/v1/tasks", {name: odd}, html=False)
        assert_400_then_usable(media, "/api/v1/tasks", {"start_time": "-" + odd}, html=False)
        # No key needed: a signed download URL with an odd expiry.
        assert_400_then_usable(media, "/files/file_abc", {"expires": odd, "signature": "x"}, html=False)
    with httpx.Client(base_url=console_server.text_url, headers=headers, timeout=30) as text:
        for name in ("page", "page_size"):
            query = {"start_time": str(now - 60), "end_time": str(now), name: odd}
            assert_400_then_usable(text, "/v1/logs", query, html=False)
        assert_400_then_usable(text, "/v1/logs", {"start_time": odd, "end_time": str(now)}, html=False)


@pytest.fixture
def team_console(console_server: ConsoleServer, team: Team) -> Iterator[ConsoleClient]:
    client = ConsoleClient(console_server.media_url)
    assert client.sign_in(team.key).status_code == 303
    yield client
    client.close()


@pytest.fixture
def operator_console(console_server: ConsoleServer) -> Iterator[ConsoleClient]:
    client = ConsoleClient(console_server.media_url)
    assert client.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
    yield client
    client.close()


@pytest.mark.parametrize("odd", ["²", "--5", "٣"])
def test_console_page_parameters_are_an_error_page(
    team_console: ConsoleClient, operator_console: ConsoleClient, team: Team, odd: str
) -> None:
    for path, params in [
        ("/tasks", {"page": odd}),
        ("/assets", {"page": odd}),
        ("/billing", {"before": odd}),
        ("/logs", {"before": f"{odd}~req_x"}),
        ("/logs-tail", {"after": f"{odd}~req_x"}),
    ]:
        assert_400_then_usable(team_console.http, path, params, html=True, then="/")
    team_page = operator_console.get("/admin/teams/" + team.name)
    assert team_page.status_code == 200, team_page.text[:300]
    for path, params in [
        (f"/admin/teams/{team.name}", {"before_id": odd}),
        ("/admin/logs", {"before": f"{odd}:req_x"}),
        ("/admin/tasks", {"before": f"{odd}:task_x"}),
    ]:
        assert_400_then_usable(operator_console.http, path, params, html=True, then="/admin/")
