"""The team console's pages over HTTP through a real `modelport serve`: what each shows, filters, exports,
the live tail, and that a team never sees another team's data."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.integration.console.conftest import MODEL, ConsoleServer, Team
from tests.support.console import ConsoleClient, csrf_of


@pytest.fixture(scope="module")
def teams(console_server: ConsoleServer) -> tuple[Team, Team]:
    return console_server.team("pages-a"), console_server.team("pages-b")


@pytest.fixture(scope="module")
def requests_of_a(console_server: ConsoleServer, teams: tuple[Team, Team]) -> list[str]:
    """Two requests by team A (one with an end user id), in the log once the writer has flushed."""
    return two_logged_requests(console_server, teams[0])


def two_logged_requests(console_server: ConsoleServer, team: Team) -> list[str]:
    ids = []
    for user in (None, "end-user-0001"):
        r = console_server.chat(team.key, "hello from a", user=user)
        assert r.status_code == 200, r.text
        ids.append(r.headers["x-request-id"])
    client = signed_in(console_server, team)
    try:
        wait_for(lambda: all(i in client.get("/logs").text for i in ids), "both requests in the log page")
    finally:
        client.close()
    return ids


def signed_in(console_server: ConsoleServer, team: Team) -> ConsoleClient:
    client = ConsoleClient(console_server.media_url)
    assert client.sign_in(team.key).status_code == 303
    return client


@pytest.fixture
def client_a(console_server: ConsoleServer, teams: tuple[Team, Team]) -> Iterator[ConsoleClient]:
    client = signed_in(console_server, teams[0])
    yield client
    client.close()


@pytest.fixture
def client_b(console_server: ConsoleServer, teams: tuple[Team, Team]) -> Iterator[ConsoleClient]:
    client = signed_in(console_server, teams[1])
    yield client
    client.close()


def wait_for(check: object, what: str, timeout: float = 30) -> None:
    assert callable(check)
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def test_every_page_answers(client_a: ConsoleClient, requests_of_a: list[str]) -> None:
    for path in ("/", "/keys", "/usage", "/logs", "/tasks", "/assets", "/billing", "/webhooks"):
        r = client_a.get(path)
        assert r.status_code == 200, (path, r.text[:500])
        assert "<h1>" in r.text and "pages-a" in r.text
        assert "https://" not in r.text and "http://" not in r.text  # nothing from another origin
    for path in ("/usage?days=5", "/logs?from=yesterday", "/logs?status=odd", "/tasks?page=0", "/logs?before=x"):
        assert client_a.get(path).status_code == 400, path


def test_logs_filters_detail_and_csv(client_a: ConsoleClient, requests_of_a: list[str]) -> None:
    plain, with_user = requests_of_a
    page = client_a.get("/logs").text
    assert plain in page and with_user in page and MODEL in page
    by_user = client_a.get("/logs", params={"svc_user_id": "end-user-0001"}).text
    assert with_user in by_user and plain not in by_user
    by_model = client_a.get("/logs", params={"model": MODEL}).text
    assert plain in by_model and with_user in by_model
    assert plain not in client_a.get("/logs", params={"model": "other/model"}).text
    assert plain not in client_a.get("/logs", params={"status": "error"}).text
    assert plain in client_a.get("/logs", params={"status": "success"}).text
    detail = client_a.get(f"/logs/{plain}")
    assert detail.status_code == 200 and "hello from a" in detail.text  # the retained input
    assert "$0.020000" in detail.text  # 10 input tokens x $1000/M + 5 output x $2000/M
    exported = client_a.get("/logs.csv")
    assert exported.headers["content-type"].startswith("text/csv")
    assert "attachment" in exported.headers["content-disposition"]
    rows = list(csv.DictReader(io.StringIO(exported.text)))
    assert {r["request_id"] for r in rows} >= {plain, with_user}
    row = next(r for r in rows if r["request_id"] == with_user)
    assert row["cost_usd"] == "0.020000" and row["svc_user_id"] == "end-user-0001" and row["model"] == MODEL
    assert row["key_id"].startswith("key_")
    assert (row["cache_write_tokens"], row["cache_write_1h_tokens"], row["price_tier"]) == ("0", "0", "standard")
    # The response cache is off for this team, the requested model served, no server state was used.
    later = ("cache", "served_model", "previous_response_id", "conversation_id")
    assert list(rows[0])[-4:] == list(later) and [row[k] for k in later] == ["", "", "", ""]


def test_usage_from_the_rollups(console_server: ConsoleServer) -> None:
    # A team of its own with exactly two requests: team A's count depends on which other tests ran first
    # (the live tail and the key tests make requests as team A; the order is random).
    team = console_server.team("pages-usage")
    two_logged_requests(console_server, team)
    client = signed_in(console_server, team)
    try:
        page = client.get("/usage").text
        assert MODEL in page and "$0.040000" in page  # two requests
        assert 'data-chart id="chart-spend-model"' in page and '"label": "fake/priced"' in page
        rows = list(csv.DictReader(io.StringIO(client.get("/usage.csv").text)))
        mine = [r for r in rows if r["model"] == MODEL]
        assert sum(int(r["requests"]) for r in mine) == 2
        assert {r["key_id"] for r in mine} == {team.key_id}
        assert sum(int(r["prompt_tokens"]) for r in mine) == 20
        assert {(r["cache_write_tokens"], r["cache_write_1h_tokens"]) for r in mine} == {("0", "0")}
        overview = client.get("/").text
        assert "2 requests" in overview and "$20.00" not in overview  # 20 USD less what was spent
    finally:
        client.close()


def test_live_tail_streams_new_requests(
    console_server: ConsoleServer, client_a: ConsoleClient, teams: tuple[Team, Team], requests_of_a: list[str]
) -> None:
    newest = requests_of_a[-1]
    seen: list[str] = []
    with client_a.http.stream("GET", "/logs-tail", timeout=60) as stream:
        assert stream.headers["content-type"].startswith("text/event-stream")
        fresh = console_server.chat(teams[0].key, "tail me").headers["x-request-id"]
        deadline = time.monotonic() + 45
        for line in stream.iter_lines():
            seen.append(line)
            if fresh in line or time.monotonic() > deadline:
                break
    text = "\n".join(seen)
    assert fresh in text and "event: rows" in text
    assert newest not in text  # only rows newer than the page's newest


def test_keys_create_once_and_revoke(console_server: ConsoleServer, client_a: ConsoleClient) -> None:
    created = client_a.post_form("/keys", {"name": "made in the console"}, csrf_from="/keys")
    assert created.status_code == 201
    key = created.text.split('id="new-key" type="text" readonly value="')[1].split('"')[0]
    assert key.startswith("mp-") and "made in the console" in created.text
    assert console_server.chat(key).status_code == 200
    listing = client_a.get("/keys").text
    assert key not in listing and key[:10] in listing  # only the prefix is ever shown again
    key_id = listing.split("made in the console")[0].rsplit('id="key-', 1)[1].split('"')[0]
    revoked = client_a.post_form(f"/keys/{key_id}/revoke", {}, csrf_from="/keys")
    assert revoked.status_code == 303
    assert console_server.chat(key).status_code == 401


def test_webhook_secret_shown_only_on_request(client_a: ConsoleClient) -> None:
    page = client_a.get("/webhooks").text
    assert "whsec_…" in page and 'id="secret"' not in page
    shown = client_a.post_form("/webhooks/reveal", {}, csrf_from="/webhooks").text
    first = shown.split('id="secret" type="text" readonly value="')[1].split('"')[0]
    assert first.startswith("whsec_")
    rotated = client_a.post_form("/webhooks/rotate", {}, csrf_from="/webhooks").text
    second = rotated.split('id="secret" type="text" readonly value="')[1].split('"')[0]
    assert second.startswith("whsec_") and second != first and "still signs" in rotated
    assert second not in client_a.get("/webhooks").text


def test_billing_shows_the_ledger_and_the_next_tier(client_a: ConsoleClient, requests_of_a: list[str]) -> None:
    page = client_a.get("/billing").text
    assert "Top-ups" in page and "$20.000000" in page
    assert "single top-up of at least $10" in page  # free -> tier1


def test_a_team_never_sees_another_teams_data(
    console_server: ConsoleServer, client_b: ConsoleClient, teams: tuple[Team, Team], requests_of_a: list[str]
) -> None:
    a = teams[0]
    for request_id in requests_of_a:
        assert client_b.get(f"/logs/{request_id}").status_code == 404
        assert request_id not in client_b.get("/logs").text
        assert request_id not in client_b.get("/logs.csv").text
    assert MODEL not in client_b.get("/usage.csv").text
    assert "No requests in this period" in client_b.get("/usage").text
    token = csrf_of(client_b.get("/keys").text)
    assert client_b.http.post(f"/keys/{a.key_id}/revoke", data={"csrf_token": token}).status_code == 404
    assert console_server.chat(a.key).status_code == 200  # A's key still works
    assert client_b.get("/tasks/task_does_not_exist").status_code == 404
    # B's live tail from the beginning of time: its first poll finds nothing of A's.
    lines = []
    with client_b.http.stream("GET", "/logs-tail", params={"after": "0~0"}, timeout=60) as stream:
        for line in stream.iter_lines():
            lines.append(line)
            if line.startswith((": keep-alive", "event: rows")):
                break
    assert lines[-1] == ": keep-alive" and not any(i in "\n".join(lines) for i in requests_of_a)


def test_pages_are_not_cached_and_refuse_framing(client_a: ConsoleClient) -> None:
    r = client_a.get("/keys")
    assert r.headers["cache-control"] == "no-store" and r.headers["x-frame-options"] == "DENY"


def test_signed_out_pages_redirect_with_next(console_server: ConsoleServer) -> None:
    r = httpx.get(console_server.media_url + "/console/logs?model=x", follow_redirects=False)
    assert r.status_code == 303 and r.headers["location"] == "/console/sign-in?next=%2Flogs%3Fmodel%3Dx"
