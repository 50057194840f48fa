"""Notification settings through a real `modelport serve` (SQLite): admin keys only, every bad body a 400
naming the field, URLs checked like task webhook URLs, changes audited with the URL masked, the team console
form; and the text gateway's money path (batched settlements, the 402 of an empty balance) sends its events."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from standardwebhooks.webhooks import Webhook

from tests.integration.keys.helpers import CHAT, admin, bearer, keys_server, new_key, new_team
from tests.integration.tasks.helpers import WebhookReceiver, wait_for
from tests.support.console import ConsoleClient
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver().running() as running:
        yield running


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory, receiver: WebhookReceiver) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("notify")
    with FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100))) as upstream:
        db_url = f"sqlite+aiosqlite:///{tmp / 'modelport.db'}"
        env = {
            "MODELPORT_NET__ALLOW_HOSTS": receiver.host,
            "MODELPORT_WEBHOOKS__SCHEDULE_SECONDS": "[0, 0.3, 0.6]",
            "MODELPORT_WEBHOOKS__POLL_INTERVAL_SECONDS": "0.2",
        }
        with keys_server(tmp, upstream, db_url, **env) as running:
            yield running


def _url(srv: RunningServer, path: str = "") -> str:
    return f"{srv.media_url}/api/v1/notifications{path}"


def test_member_keys_cannot_read_or_change_notifications(srv: RunningServer) -> None:
    new_team(srv, "n-member")
    member, _ = new_key(srv, "n-member")
    for method, path in (("GET", ""), ("PUT", ""), ("POST", "/test"), ("GET", "/deliveries")):
        answer = httpx.request(method, _url(srv, path), json={}, headers=bearer(member), timeout=30)
        assert answer.status_code == 403, (method, path, answer.text)


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ([1], "body"),
        ({"urls": "https://example.com"}, "urls"),
        ({"url": 5}, "url"),
        ({"url": "  "}, "url"),
        ({"url": "http://example.com/hook"}, "url"),  # not https
        ({"url": "https://user:pw@example.com/hook"}, "url"),
        ({"url": "https://localhost/hook"}, "url"),  # a private address: refused now, not at delivery
        ({"url": "https://10.1.2.3/hook"}, "url"),
        ({"balance_below_usd": "abc"}, "balance_below_usd"),
        ({"balance_below_usd": 5.5}, "balance_below_usd"),  # a float is not exact money
        ({"balance_below_usd": "-1"}, "balance_below_usd"),
        ({"balance_below_usd": "0"}, "balance_below_usd"),
        ({"balance_below_usd": "0.0000001"}, "balance_below_usd"),
        ({"key_spend_percent": 80}, "key_spend_percent"),
        ({"key_spend_percent": [0]}, "key_spend_percent"),
        ({"key_spend_percent": [101]}, "key_spend_percent"),
        ({"key_spend_percent": ["80"]}, "key_spend_percent"),
        ({"key_spend_percent": [True]}, "key_spend_percent"),
        ({"key_spend_percent": [80, 80]}, "key_spend_percent"),
        ({"key_spend_percent": list(range(1, 12))}, "key_spend_percent"),
        ({"key_expiry_days": 0}, "key_expiry_days"),
        ({"key_expiry_days": 366}, "key_expiry_days"),
        ({"key_expiry_days": "7"}, "key_expiry_days"),
        ({"key_expiry_days": True}, "key_expiry_days"),
    ],
)
def test_bad_settings_are_400_naming_the_field(srv: RunningServer, body: Any, field: str) -> None:
    boss = _boss(srv, "n-bad")
    answer = httpx.put(_url(srv), json=body, headers=bearer(boss), timeout=30)
    assert answer.status_code == 400 and answer.json()["code"] == 400, answer.text
    assert field in answer.json()["message"], answer.text
    # Nothing was stored.
    got = httpx.get(_url(srv), headers=bearer(boss), timeout=30).json()["data"]
    assert got == {"url": None, "balance_below_usd": None, "key_spend_percent": [], "key_expiry_days": None}


def test_invalid_json_is_400(srv: RunningServer) -> None:
    boss = _boss(srv, "n-bad")
    answer = httpx.put(_url(srv), content=b"{nope", headers=bearer(boss), timeout=30)
    assert answer.status_code == 400 and "not valid JSON" in answer.json()["message"]


_BOSSES: dict[str, str] = {}


def _boss(srv: RunningServer, team: str, usd: str = "0.01") -> str:
    if team not in _BOSSES:
        new_team(srv, team, usd=usd)
        _BOSSES[team] = new_key(srv, team, role="admin")[0]
    return _BOSSES[team]


def _delivered(receiver: WebhookReceiver, secret: str, team_id: str) -> list[dict[str, Any]]:
    with receiver._lock:
        items = list(receiver.received)
    out = []
    for item in items:
        body = json.loads(item.body)
        if body["data"].get("team_id") != team_id:
            continue
        out.append(Webhook(secret).verify(item.body, item.headers))
    return out


def test_settings_round_trip_are_audited_and_the_text_gateway_sends_its_events(
    srv: RunningServer, receiver: WebhookReceiver
) -> None:
    boss = _boss(srv, "n-text")
    team_id = admin(srv, "GET", "/teams/n-text").json()["data"]["id"]
    secret = httpx.get(f"{srv.media_url}/api/v1/webhooks/secret", headers=bearer(boss), timeout=30).json()["data"]
    hook = receiver.url("/hooks/secret-token-123")
    body = {"url": hook, "balance_below_usd": "0.0095", "key_spend_percent": [100, 50]}
    put = httpx.put(_url(srv), json=body, headers=bearer(boss), timeout=30)
    assert put.status_code == 200, put.text
    expected = {"url": hook, "balance_below_usd": "0.0095", "key_spend_percent": [50, 100], "key_expiry_days": None}
    assert put.json()["data"] == expected
    assert httpx.get(_url(srv), headers=bearer(boss), timeout=30).json()["data"] == expected
    (event,) = [
        e
        for e in admin(srv, "GET", "/audit", params={"team": "n-text"}).json()["data"]["events"]
        if e["action"] == "team.notifications"
    ]
    assert event["actor"]["kind"] == "team_key" and event["before"] is None
    assert event["after"]["url"].startswith(f"http://{receiver.host}") and "secret-token-123" not in json.dumps(event)

    # 10 + 100 tokens at 1 and 2 USD per million: 210 micro-USD a request; the third takes the balance
    # (0.01 USD) below 0.0095. The settlements are batched by the writer; the event is sent once.
    for _ in range(5):
        answer = httpx.post(f"{srv.text_url}/v1/chat/completions", json=CHAT, headers=bearer(boss), timeout=30)
        assert answer.status_code == 200, answer.text
    wait_for(lambda: len(_delivered(receiver, secret["secret"], team_id)) >= 1, 30, "balance.low")
    (low,) = _delivered(receiver, secret["secret"], team_id)
    assert low["type"] == "balance.low" and low["data"]["threshold_usd"] == "0.0095"
    assert float(low["data"]["balance_usd"]) < 0.0095

    # A team with nothing left: its 402s send balance.exhausted once.
    poor = _boss(srv, "n-poor", usd="0.000001")
    poor_id = admin(srv, "GET", "/teams/n-poor").json()["data"]["id"]
    poor_secret = httpx.get(f"{srv.media_url}/api/v1/webhooks/secret", headers=bearer(poor), timeout=30)
    assert httpx.put(_url(srv), json={"url": receiver.url()}, headers=bearer(poor), timeout=30).status_code == 200
    for _ in range(3):
        refused = httpx.post(f"{srv.text_url}/v1/chat/completions", json=CHAT, headers=bearer(poor), timeout=30)
        assert refused.status_code == 402, refused.text
    wait_for(lambda: len(_delivered(receiver, poor_secret.json()["data"]["secret"], poor_id)) >= 1, 30, "exhausted")
    (exhausted,) = _delivered(receiver, poor_secret.json()["data"]["secret"], poor_id)
    assert exhausted["type"] == "balance.exhausted" and exhausted["data"]["available_usd"] == "0.0000"

    # The test event, and the deliveries page.
    sent = httpx.post(_url(srv, "/test"), headers=bearer(boss), timeout=30)
    assert sent.status_code == 200, sent.text
    wait_for(lambda: len(_delivered(receiver, secret["secret"], team_id)) == 2, 30, "notification.test")
    page = httpx.get(_url(srv, "/deliveries"), headers=bearer(boss), timeout=30).json()["data"]
    assert [d["event_type"] for d in page["deliveries"]] == ["notification.test", "balance.low"]
    assert page["next_before_id"] is None
    bad = httpx.get(_url(srv, "/deliveries"), params={"limit": "0"}, headers=bearer(boss), timeout=30)
    assert bad.status_code == 400


def test_without_a_url_the_test_event_is_a_400(srv: RunningServer) -> None:
    boss = _boss(srv, "n-nourl")
    answer = httpx.post(_url(srv, "/test"), headers=bearer(boss), timeout=30)
    assert answer.status_code == 400 and "url" in answer.json()["message"]


def test_the_team_console_form_saves_tests_and_lists(srv: RunningServer, receiver: WebhookReceiver) -> None:
    boss = _boss(srv, "n-console")
    member, _ = new_key(srv, "n-console")
    team = ConsoleClient(srv.media_url)
    other = ConsoleClient(srv.media_url)
    try:
        assert team.sign_in(boss).status_code == 303
        form = {
            "url": receiver.url(),
            "balance_below_usd": "2.50",
            "key_spend_percent": "80, 100",
            "key_expiry_days": "",
        }
        saved = team.post_form("/notifications", form)
        assert saved.status_code == 200 and "Settings saved." in saved.text, saved.text
        got = httpx.get(_url(srv), headers=bearer(boss), timeout=30).json()["data"]
        assert got == {
            "url": receiver.url(),
            "balance_below_usd": "2.5000",
            "key_spend_percent": [80, 100],
            "key_expiry_days": None,
        }
        bad = team.post_form("/notifications", {**form, "key_spend_percent": "80, lots"})
        assert bad.status_code == 400 and "key_spend_percent" in bad.text
        tested = team.post_form("/notifications/test", {}, csrf_from="/notifications")
        assert tested.status_code == 200 and "queued" in tested.text
        wait_for(lambda: "delivered" in team.get("/notifications").text, 30, "the test delivery on the page")
        assert "notification.test" in team.get("/notifications").text
        assert other.sign_in(member).status_code == 303
        assert other.get("/notifications").status_code == 403
    finally:
        team.close()
        other.close()
    actions = [
        (e["actor"]["kind"], e["action"])
        for e in admin(srv, "GET", "/audit", params={"team": "n-console"}).json()["data"]["events"]
    ]
    assert ("team_console", "team.notifications") in actions


def _test_status(srv: RunningServer, boss: str) -> str:
    page = httpx.get(_url(srv, "/deliveries"), headers=bearer(boss), timeout=30).json()["data"]
    status: str = page["deliveries"][0]["status"]
    return status


def test_one_test_event_in_flight_per_team(srv: RunningServer, receiver: WebhookReceiver) -> None:
    """Issue 33 item 7: while a team's test event is still pending, another is a 429 (checked in the database,
    so on every process); once it has ended, the next one is taken."""
    boss = _boss(srv, "n-inflight")
    assert (
        httpx.put(_url(srv), json={"url": receiver.url("/held")}, headers=bearer(boss), timeout=30).status_code == 200
    )
    arrived, release = threading.Event(), threading.Event()
    answer = receiver.answer

    def holding(path: str, n: int) -> tuple[int, dict[str, str]]:
        if path != "/held":
            return answer(path, n)
        arrived.set()
        release.wait(60)  # the delivery stays pending while its receiver has not answered
        return 204, {}

    receiver.answer = holding
    try:
        first = httpx.post(_url(srv, "/test"), headers=bearer(boss), timeout=30)
        assert first.status_code == 200, first.text
        assert arrived.wait(30), "the test event never reached the receiver"
        for _ in range(5):
            again = httpx.post(_url(srv, "/test"), headers=bearer(boss), timeout=30)
            assert again.status_code == 429, again.text
            assert "previous notification test is still being delivered" in again.json()["message"]
        # Another team's test is not held up by this one.
        other = _boss(srv, "n-inflight-other")
        put = httpx.put(_url(srv), json={"url": receiver.url()}, headers=bearer(other), timeout=30)
        assert put.status_code == 200
        assert httpx.post(_url(srv, "/test"), headers=bearer(other), timeout=30).status_code == 200
    finally:
        release.set()
        receiver.answer = answer
    wait_for(lambda: _test_status(srv, boss) != "pending", 60, "the first test to end")
    page = httpx.get(_url(srv, "/deliveries"), headers=bearer(boss), timeout=30).json()["data"]
    assert [d["event_type"] for d in page["deliveries"]] == ["notification.test"]  # the refused ones: no row
    assert httpx.post(_url(srv, "/test"), headers=bearer(boss), timeout=30).status_code == 200


def test_a_test_event_counts_against_the_query_rate_limit(srv: RunningServer, receiver: WebhookReceiver) -> None:
    """Issue 33 item 7: a team on a tier of one query a minute that listed its models has no query left for a
    test event."""
    boss = _boss(srv, "n-queries")
    assert admin(srv, "PUT", "/teams/n-queries/tier", json={"tier": "one-query"}).status_code == 200
    assert httpx.put(_url(srv), json={"url": receiver.url()}, headers=bearer(boss), timeout=30).status_code == 200
    models = httpx.get(f"{srv.text_url}/v1/models", headers=bearer(boss), timeout=30)
    assert models.status_code == 200, models.text
    refused = httpx.post(_url(srv, "/test"), headers=bearer(boss), timeout=30)
    assert refused.status_code == 429, refused.text
    assert "query rate limit" in refused.json()["message"] and "retry-after" in refused.headers
    page = httpx.get(_url(srv, "/deliveries"), headers=bearer(boss), timeout=30).json()["data"]
    assert page["deliveries"] == []


def test_the_console_test_button_counts_against_the_query_rate_limit(
    srv: RunningServer, receiver: WebhookReceiver
) -> None:
    """Issue 33 item 7, the console's door: the test button spends a query like the API's test route."""
    boss = _boss(srv, "n-console-queries")
    assert admin(srv, "PUT", "/teams/n-console-queries/tier", json={"tier": "one-query"}).status_code == 200
    assert httpx.put(_url(srv), json={"url": receiver.url()}, headers=bearer(boss), timeout=30).status_code == 200
    console = ConsoleClient(srv.media_url)
    try:
        assert console.sign_in(boss).status_code == 303
        models = httpx.get(f"{srv.text_url}/v1/models", headers=bearer(boss), timeout=30)
        assert models.status_code == 200, models.text
        refused = console.post_form("/notifications/test", {}, csrf_from="/notifications")
        assert refused.status_code == 429, refused.text
        assert "query rate limit" in refused.text
    finally:
        console.close()
    page = httpx.get(_url(srv, "/deliveries"), headers=bearer(boss), timeout=30).json()["data"]
    assert page["deliveries"] == []
