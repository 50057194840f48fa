"""Issue 33 items 2 and 3, through a real `modelport serve`: a key cannot widen or restart its spend period
(nor give a child a wider one), and a lowered spend limit binds the next request at once, even in a process
that reserved a slice of the key's limit under the old one."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.integration.keys.helpers import CHAT, COST_MICROS, admin, bearer, keys_server, new_key, new_team
from tests.support.console import ConsoleClient
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer

WIDER = {"code": 403, "message": "Forbidden: this API key cannot give a key more than its own spend_limit_period"}
RESTART = {"code": 403, "message": "Forbidden: this API key cannot change its own spend_limit_period"}
CONSOLE_KEY = {"name": "", "spend_limit": "", "period": "month", "models": "", "rpm": "", "tpm": ""}


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    tmp = tmp_path_factory.mktemp("key-spend-hardening")
    with (
        FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100))) as upstream,
        keys_server(tmp, upstream, f"sqlite+aiosqlite:///{tmp / 'spend.db'}") as running,
    ):
        yield running


def keys_api(srv: RunningServer, key: str, method: str, path: str = "", **kw: object) -> httpx.Response:
    return httpx.request(method, srv.media_url + "/api/v1/keys" + path, headers=bearer(key), timeout=30, **kw)  # type: ignore[arg-type]


def chat(srv: RunningServer, key: str) -> int:
    # A fresh connection each time, so `--workers 2` spreads the requests over both processes.
    return httpx.post(srv.text_url + "/v1/chat/completions", json=CHAT, headers=bearer(key), timeout=60).status_code


def settled_spend(srv: RunningServer, key: str) -> dict[str, float]:
    """The key's spend once nothing is frozen any more (settlements are written in the background)."""
    deadline = time.monotonic() + 30
    while True:
        spend = httpx.get(srv.media_url + "/api/v1/apikey/validate", headers=bearer(key), timeout=30)
        found: dict[str, float] = spend.json()["data"]["spend"]
        if found["frozen_usd"] == 0:
            return found
        assert time.monotonic() < deadline, found
        time.sleep(0.1)


def test_a_key_cannot_give_a_child_a_wider_spend_period(srv: RunningServer) -> None:
    new_team(srv, "wider")
    total, _ = new_key(srv, "wider", role="admin", spend_limit_usd="0.0001", spend_limit_period="total")
    for period in ("month", "week", "day"):  # the same amount renewed each period: more money over time
        answer = keys_api(srv, total, "POST", json={"spend_limit_usd": "0.0001", "spend_limit_period": period})
        assert (answer.status_code, answer.json()) == (403, WIDER), period
    same = keys_api(srv, total, "POST", json={"spend_limit_usd": "0.0001", "spend_limit_period": "total"})
    assert same.status_code == 200, same.text
    weekly, _ = new_key(srv, "wider", role="admin", spend_limit_usd="1", spend_limit_period="week")
    for period, status in (("total", 200), ("month", 200), ("week", 200), ("day", 403)):
        answer = keys_api(srv, weekly, "POST", json={"spend_limit_usd": "1", "spend_limit_period": period})
        assert answer.status_code == status, (period, answer.text)
    # The team console applies the same rule.
    client = ConsoleClient(srv.media_url)
    try:
        assert client.sign_in(total).status_code == 303
        made = client.post_form("/keys", {**CONSOLE_KEY, "name": "daily", "spend_limit": "0.0001", "period": "day"})
        assert made.status_code == 403 and "spend_limit_period" in made.text
    finally:
        client.close()
    names = {k["name"] for k in admin(srv, "GET", "/teams/wider/keys").json()["data"]["keys"]}
    assert "daily" not in names


def test_a_key_cannot_restart_its_own_spend_period(srv: RunningServer) -> None:
    new_team(srv, "restart")
    limit = 2 * COST_MICROS / 1_000_000
    monthly, monthly_id = new_key(srv, "restart", role="admin", spend_limit_usd=str(limit), spend_limit_period="month")
    codes = [chat(srv, monthly) for _ in range(4)]
    assert codes[0] == 200 and codes[-1] == 402, codes  # its month's limit is spent
    # Each would count from zero (or from one day's spend); a shorter period is also a wider one.
    for period, refusal in (("day", WIDER), ("week", WIDER), ("total", RESTART)):
        answer = keys_api(srv, monthly, "PATCH", f"/{monthly_id}", json={"spend_limit_period": period})
        assert (answer.status_code, answer.json()) == (403, refusal), period
    assert chat(srv, monthly) == 402
    assert admin(srv, "GET", f"/keys/{monthly_id}").json()["data"]["spend_limit_period"] == "month"
    # Its other fields still change, and the operator may still change the period.
    assert keys_api(srv, monthly, "PATCH", f"/{monthly_id}", json={"name": "renamed"}).status_code == 200
    assert admin(srv, "PATCH", f"/keys/{monthly_id}", json={"spend_limit_period": "day"}).status_code == 200


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_lowered_spend_limit_binds_the_next_request(workers: str, tmp_path: Path) -> None:
    """A key at 1 USD spends two requests (each process serving one holds a slice of 16 estimates), then its
    limit is lowered below what it spent plus one request: every request after the change is refused, and
    the key's spend stays where it was."""
    with (
        FakeUpstream(Reply.text("answer", usage=Usage(input_tokens=10, output_tokens=100))) as upstream,
        keys_server(
            tmp_path,
            upstream,
            f"sqlite+aiosqlite:///{tmp_path / 'lowered.db'}",
            "--workers",
            workers,
            MODELPORT_CREDIT__IDLE_RETURN_SECONDS="600",  # the slices stay held however slow the machine
        ) as srv,
    ):
        new_team(srv, "lowered")
        key, key_id = new_key(srv, "lowered", spend_limit_usd="1")
        before = [chat(srv, key) for _ in range(2 * int(workers))]
        assert before == [200] * len(before)
        lowered = (len(before) * COST_MICROS + COST_MICROS // 2) / 1_000_000  # not one more request
        assert admin(srv, "PATCH", f"/keys/{key_id}", json={"spend_limit_usd": str(lowered)}).status_code == 200
        after = [chat(srv, key) for _ in range(10)]
        assert after == [402] * 10, after
        final = settled_spend(srv, key)
        assert final["spent_usd"] == len(before) * COST_MICROS / 1_000_000 and final["spent_usd"] <= lowered
