"""Failover the client never sees, against a real `modelport serve` (issue 39, Done-when).

Every model here has two deployments: A on a chaos fake upstream scripted to fail one way, B on a healthy
fake (weight 0: the rotation always starts at A, B is tried only when A fails). For each failure kind,
each client protocol (and a translated path: a Chat client served by Anthropic upstreams), streamed and
not, the test says what the client receives (a clean 200 with B's answer, or, once A's content was relayed,
exactly one error in the client's protocol), what is logged (one row) and what is charged (B's answer
only: a failed attempt that relayed nothing is free). One server for the module; failures never cool a
deployment here (the window counts 1000) but a 429, which cools it at once.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.console import ConsoleClient
from tests.support.fake_shapes import openai_error
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.ports import free_port
from tests.support.server import RunningServer, run_server

ADMIN = "failover-admin-token-0123456789-abcdef"
PRICES = '{ input = "1000", output = "2000" }'  # per million tokens: 1000 and 2000 micro-USD per token
B_USAGE = Usage(input_tokens=10, output_tokens=5)
B_COST = Decimal("0.02")  # 10 * 1000 + 5 * 2000 micro-USD
BACKUP_PRICES = '{ input = "3000", output = "4000" }'
BACKUP_COST = Decimal("0.05")  # 10 * 3000 + 5 * 4000 micro-USD: a fallback is billed at its own prices
FIRST_BYTE = 1.5  # A's first-byte timeout; a hang outlasts it
HANG = 4.0
WATCH_PROBE = 300  # chaos/watched: probed while cooling, but not within a test


@dataclass(frozen=True)
class Client:
    name: str  # the client protocol
    kind: str  # the deployments' upstream kind
    path: str

    def body(self, model: str, stream: bool) -> dict[str, Any]:
        if self.name == "responses":
            return {"model": model, "input": "hi", "stream": stream}
        body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "hi"}], "stream": stream}
        if self.name == "messages":
            body["max_tokens"] = 50
        return body


CLIENTS = [
    Client("chat", "openai_chat", "/v1/chat/completions"),
    Client("responses", "openai_responses", "/v1/responses"),
    Client("messages", "anthropic", "/v1/messages"),
    Client("chat", "anthropic", "/v1/chat/completions"),  # translated
]
KINDS = ["500", "429", "refused", "hang", "error_event", "dies_before_content", "slow_first_byte", "wrong_json"]


def _model(client: Client, suffix: str) -> str:
    return f"chaos/{client.name}-{client.kind}-{suffix}"


def _base(url: str, kind: str) -> str:
    return url if kind == "anthropic" else url + "/v1"


def _deployment(name: str, kind: str, url: str) -> str:
    return f'name = "{name}", kind = "{kind}", base_url = "{_base(url, kind)}", model = "{name}"'


def _catalog(flaky: str, healthy: str, dead: str) -> str:
    out = []
    for client in CLIENTS:
        for suffix, first in (("main", flaky), ("refused", dead), ("429-s", flaky), ("429-w", flaky)):
            out.append(f"""[[text_models]]
id = "{_model(client, suffix)}"
prices = {PRICES}
deployments = [
  {{ {_deployment("a", client.kind, first)}, first_byte_timeout_seconds = {FIRST_BYTE} }},
  {{ {_deployment("b", client.kind, healthy)}, weight = 0 }},
]
""")
    many = ", ".join(f'{{ kind = "openai_chat", base_url = "{flaky}/v1", model = "m{i}" }}' for i in range(4))
    out.append(f'[[text_models]]\nid = "chaos/many"\nprices = {PRICES}\ndeployments = [{many}]\n')
    out.append(f"""[[text_models]]
id = "chaos/fb-main"
prices = {PRICES}
context_window = 100
fallbacks = ["chaos/none", "chaos/fb-backup"]
context_fallbacks = ["chaos/fb-wide"]
deployments = [{{ {_deployment("a", "openai_chat", flaky)} }}]

[[text_models]]
id = "chaos/fb-backup"
prices = {BACKUP_PRICES}
deployments = [{{ {_deployment("b", "openai_chat", healthy)} }}]

[[text_models]]
id = "chaos/probed"
prices = {PRICES}
deployments = [
  {{ {_deployment("a", "openai_chat", flaky)}, probe = "models", probe_seconds = 0.3 }},
  {{ {_deployment("b", "openai_chat", healthy)}, weight = 0 }},
]

[[text_models]]
id = "chaos/visible"
prices = {PRICES}
deployments = [
  {{ {_deployment("a", "openai_chat", flaky)} }},
  {{ {_deployment("b", "openai_chat", healthy)}, weight = 0 }},
]

[[text_models]]
id = "chaos/watched"
prices = {PRICES}
deployments = [
  {{ {_deployment("a", "openai_chat", flaky)}, probe = "models", probe_seconds = {WATCH_PROBE} }},
  {{ {_deployment("b", "openai_chat", healthy)}, weight = 0 }},
]

[[text_models]]
id = "chaos/fb-wide"
prices = {BACKUP_PRICES}
context_window = 1000000
deployments = [{{ {_deployment("b", "openai_chat", healthy)} }}]
""")
    return "\n".join(out)


@dataclass
class Chaos:
    server: RunningServer
    flaky: FakeUpstream
    healthy: FakeUpstream

    def admin(self, method: str, path: str, **kw: Any) -> httpx.Response:
        url = self.server.media_url + "/admin/v1" + path
        return httpx.request(method, url, headers={"Authorization": f"Bearer {ADMIN}"}, **kw)

    def team(self, name: str, **key: Any) -> str:
        assert self.admin("POST", "/teams", json={"name": name}).status_code == 200
        assert self.admin("POST", f"/teams/{name}/topups", json={"amount_usd": "10"}).status_code == 200
        made = self.admin("POST", f"/teams/{name}/keys", json=key)
        assert made.status_code == 200, made.text
        secret: str = made.json()["data"]["key"]
        return secret

    def logs(self, key: str, count: int) -> list[dict[str, Any]]:
        now = int(time.time())
        query = {"start_time": now - 3600, "end_time": now + 60, "page_size": 100}
        deadline = time.monotonic() + 15
        while True:
            r = httpx.get(self.server.text_url + "/v1/logs", params=query, headers={"Authorization": f"Bearer {key}"})
            rows: list[dict[str, Any]] = r.json()["requests"]
            if len(rows) >= count or time.monotonic() > deadline:
                return rows
            time.sleep(0.1)

    def settled_balance(self, key: str) -> Decimal:
        deadline = time.monotonic() + 15
        while True:
            data = httpx.get(
                self.server.media_url + "/api/v1/team/balance", headers={"Authorization": f"Bearer {key}"}
            ).json()["data"]
            if data["frozen_balance"] == 0 or time.monotonic() > deadline:
                return Decimal(str(data["available_balance"]))
            time.sleep(0.1)


def _dead_port() -> int:
    return free_port()  # nobody listens there: connections to it are refused


@pytest.fixture(scope="module")
def chaos(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chaos]:
    tmp = tmp_path_factory.mktemp("chaos")
    with FakeUpstream() as flaky, FakeUpstream(Reply.text("served by b", usage=B_USAGE)) as healthy:
        catalog = tmp / "catalog.toml"
        catalog.write_text(_catalog(flaky.base_url, healthy.base_url, f"http://127.0.0.1:{_dead_port()}"))
        with run_server(
            Path(tmp),
            MODELPORT_CATALOG=str(catalog),
            MODELPORT_ADMIN_TOKEN=ADMIN,
            MODELPORT_ROUTING__FAILURES_BEFORE_COOLDOWN="1000",
        ) as server:
            yield Chaos(server, flaky, healthy)


def _failure(kind: str, stream: bool, client: Client) -> Reply:
    """What A does for `kind`."""
    if kind == "500":
        return Reply.error(500, "A is down")
    if kind == "429":
        return Reply.error(429, "A is rate limited", headers={"retry-after": "30"})
    if kind == "hang":
        return Reply(delay=HANG)
    if kind == "error_event":
        if stream:
            return Reply.text("never shown", error_after=1, error_message="quota exceeded on A")
        return Reply(raw_body=json.dumps(openai_error(500, "quota exceeded on A", None, None)).encode())
    if kind == "dies_before_content":
        return Reply.drop(after_events=1)
    if kind == "slow_first_byte":
        return Reply.text("too late", chunk_delay=HANG) if stream else Reply(delay=HANG)
    assert kind == "wrong_json", kind
    return Reply(raw_body=b'data: {"broken\n\n' if stream else b'{"id": "x", "choices": [')


@dataclass
class Received:
    status: int
    text: str
    errors: int  # error events (streams) or error bodies
    ended: bool  # the stream's final event arrived (a whole body: True)
    model: str | None


def _send(chaos: Chaos, client: Client, key: str, model: str, stream: bool) -> Received:
    url = chaos.server.text_url + client.path
    headers = {"Authorization": f"Bearer {key}"}
    body = client.body(model, stream)
    if not stream:
        r = httpx.post(url, json=body, headers=headers, timeout=60)
        data = r.json()
        if r.status_code != 200:
            return Received(r.status_code, "", 1, True, None)
        return Received(200, _body_text(client, data), 0, True, data.get("model"))
    text, errors, ended, seen_model = [], 0, False, None
    with httpx.stream("POST", url, json=body, headers=headers, timeout=60) as r:
        if r.status_code != 200:
            r.read()
            return Received(r.status_code, "", 1, True, None)
        event = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                event = line[7:]
                continue
            if not line.startswith("data: "):
                continue
            data = line[6:]
            if data == "[DONE]":
                ended = True
                continue
            parsed = json.loads(data)
            kind = event or parsed.get("type")
            if ("error" in parsed and client.name == "chat") or kind in ("error", "response.failed"):
                errors += 1
            if kind in ("response.completed", "message_stop"):
                ended = True
            seen_model = seen_model or _event_model(parsed)
            text.append(_delta_text(client, kind, parsed))
    return Received(200, "".join(text), errors, ended, seen_model)


def _body_text(client: Client, data: dict[str, Any]) -> str:
    if client.name == "chat":
        return str(data["choices"][0]["message"]["content"])
    if client.name == "responses":
        return "".join(c["text"] for item in data["output"] for c in item.get("content", []) if "text" in c)
    return "".join(block.get("text", "") for block in data["content"])


def _delta_text(client: Client, kind: str | None, parsed: dict[str, Any]) -> str:
    if client.name == "chat":
        choices = parsed.get("choices") or [{}]
        return str((choices[0].get("delta") or {}).get("content") or "")
    if kind == "response.output_text.delta" or kind == "content_block_delta":
        delta = parsed.get("delta")
        return delta if isinstance(delta, str) else str((delta or {}).get("text", ""))
    return ""


def _event_model(parsed: dict[str, Any]) -> str | None:
    for holder in (parsed, parsed.get("response"), parsed.get("message")):
        if isinstance(holder, dict) and isinstance(holder.get("model"), str):
            return str(holder["model"])
    return None


_ids = iter(range(1_000_000))


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: f"{c.name}-{c.kind}")
@pytest.mark.parametrize("kind", KINDS)
def test_a_failure_before_the_first_byte_is_answered_by_the_next_deployment(
    chaos: Chaos, kind: str, client: Client, stream: bool
) -> None:
    chaos.flaky.reset()
    chaos.healthy.reset()
    key = chaos.team(f"chaos-{next(_ids)}")
    suffix = {"refused": "refused", "429": "429-s" if stream else "429-w"}.get(kind, "main")
    model = _model(client, suffix)
    if kind != "refused":
        chaos.flaky.push(_failure(kind, stream, client))
    got = _send(chaos, client, key, model, stream)
    # The client: one clean answer, B's, naming the model it asked for.
    assert (got.status, got.errors, got.ended) == (200, 0, True), got
    assert got.text == "served by b" and got.model == model
    assert chaos.flaky.call_count() == (0 if kind == "refused" else 1)
    assert chaos.healthy.call_count() == 1
    # Logged once, a success, charged B's answer only.
    rows = chaos.logs(key, 1)
    assert [(r["status"], r["prompt_tokens"], r["completion_tokens"]) for r in rows] == [("success", 10, 5)]
    assert Decimal(str(rows[0]["cost"])) == B_COST
    assert chaos.settled_balance(key) == Decimal(10) - B_COST
    if kind == "429":  # A cools for its Retry-After: the next request goes straight to B
        again = _send(chaos, client, key, model, stream)
        assert again.status == 200 and again.text == "served by b"
        assert chaos.flaky.call_count() == 1 and chaos.healthy.call_count() == 2


@pytest.mark.parametrize("client", CLIENTS, ids=lambda c: f"{c.name}-{c.kind}")
def test_a_stream_that_dies_after_content_ends_with_one_error_and_is_billed_for_what_was_sent(
    chaos: Chaos, client: Client
) -> None:
    chaos.flaky.reset()
    chaos.healthy.reset()
    key = chaos.team(f"chaos-{next(_ids)}")
    words = " ".join(f"w{i}" for i in range(30))
    chaos.flaky.push(Reply.text(words, usage=Usage(10, 30), drop_after=12))
    got = _send(chaos, client, key, _model(client, "main"), True)
    assert got.status == 200 and got.errors == 1 and not got.ended
    assert got.text and words.startswith(got.text)  # A's first words, then the one error
    assert chaos.healthy.call_count() == 0  # committed to A: never a second answer
    rows = chaos.logs(key, 1)
    assert len(rows) == 1 and rows[0]["status"] == "error"
    cost = Decimal(str(rows[0]["cost"]))
    assert cost > 0 and chaos.settled_balance(key) == Decimal(10) - cost


def test_max_attempts_bounds_the_upstream_calls_of_a_request(chaos: Chaos) -> None:
    chaos.flaky.reset()
    key = chaos.team(f"chaos-{next(_ids)}")
    chaos.flaky.push(*[Reply.error(500) for _ in range(4)])
    client = CLIENTS[0]
    got = _send(chaos, client, key, "chaos/many", False)
    assert got.status == 502
    assert chaos.flaky.call_count() == 3  # MODELPORT_ROUTING__MAX_ATTEMPTS, default 3, of 4 deployments
    rows = chaos.logs(key, 1)
    assert [r["status"] for r in rows] == ["error"] and Decimal(str(rows[0]["cost"])) == 0
    assert chaos.settled_balance(key) == Decimal(10)


def _fresh(chaos: Chaos) -> str:
    chaos.flaky.reset()
    chaos.healthy.reset()
    return chaos.team(f"chaos-{next(_ids)}")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
def test_a_fallback_model_serves_when_the_models_deployments_fail(chaos: Chaos, stream: bool) -> None:
    key = _fresh(chaos)
    chaos.flaky.push(Reply.error(503, "A is down"))
    got = _send(chaos, CLIENTS[0], key, "chaos/fb-main", stream)
    assert (got.status, got.errors, got.text) == (200, 0, "served by b")
    assert got.model == "chaos/fb-backup"  # the answer names the model that served
    rows = chaos.logs(key, 1)
    assert [(r["model"]["model_name"], r["served_model"]) for r in rows] == [("fb-main", "chaos/fb-backup")]
    assert Decimal(str(rows[0]["cost"])) == BACKUP_COST
    assert chaos.settled_balance(key) == Decimal(10) - BACKUP_COST


def test_a_fallback_the_key_may_not_use_is_skipped(chaos: Chaos) -> None:
    key = _fresh(chaos)
    narrow = chaos.team(f"chaos-{next(_ids)}", models=["chaos/fb-main"])
    chaos.flaky.push(Reply.error(503, "A is down"))
    assert _send(chaos, CLIENTS[0], narrow, "chaos/fb-main", False).status == 502
    assert chaos.healthy.call_count() == 0
    chaos.flaky.push(Reply.error(503, "A is down"))
    assert _send(chaos, CLIENTS[0], key, "chaos/fb-main", False).status == 200  # the same request, another key


def test_the_requested_model_serving_logs_no_served_model(chaos: Chaos) -> None:
    key = _fresh(chaos)
    chaos.flaky.push(Reply.text("from a", usage=B_USAGE))
    got = _send(chaos, CLIENTS[0], key, "chaos/fb-main", False)
    assert (got.status, got.text, got.model) == (200, "from a", "chaos/fb-main")
    rows = chaos.logs(key, 1)
    assert rows[0]["served_model"] is None and Decimal(str(rows[0]["cost"])) == B_COST


def test_context_fallbacks_take_a_request_over_the_context_window(chaos: Chaos) -> None:
    key = _fresh(chaos)
    client = CLIENTS[0]
    long_body = client.body("chaos/fb-main", False)
    long_body["messages"][0]["content"] = "word " * 400  # well over 100 tokens by the estimate
    r = httpx.post(
        chaos.server.text_url + client.path, json=long_body, headers={"Authorization": f"Bearer {key}"}, timeout=60
    )
    assert r.status_code == 200 and r.json()["model"] == "chaos/fb-wide"
    assert chaos.flaky.call_count() == 0  # not even tried: the estimate was over its window
    # Under the estimate but refused by the upstream as too long: the context fallback, not the plain one.
    chaos.flaky.push(Reply.error(400, "too long", code="context_length_exceeded"))
    got = _send(chaos, client, key, "chaos/fb-main", False)
    assert (got.status, got.model) == (200, "chaos/fb-wide")
    rows = chaos.logs(key, 2)
    assert sorted(str(r["served_model"]) for r in rows) == ["chaos/fb-wide", "chaos/fb-wide"]


def test_a_probe_brings_a_cooling_deployment_back_without_user_traffic(chaos: Chaos) -> None:
    key = _fresh(chaos)
    chaos.flaky.push(Reply.error(429, "slow down", headers={"retry-after": "600"}))
    assert _send(chaos, CLIENTS[0], key, "chaos/probed", False).text == "served by b"
    deadline = time.monotonic() + 15  # probes every 0.3 s: the model list answers, A is back long before 600 s
    while True:
        r = chaos.admin("GET", "/upstreams")
        state = {d["deployment"]: d for d in r.json()["data"]["deployments"]}["chaos/probed#0"]["state"]
        if state == "healthy" or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert state == "healthy"
    chaos.flaky.push(Reply.text("from a"))
    assert _send(chaos, CLIENTS[0], key, "chaos/probed", False).text == "from a"
    assert chaos.flaky.call_count() == 2  # the probes sent no completion: only the two requests'


def test_the_operator_sees_each_deployments_state(chaos: Chaos) -> None:
    key = _fresh(chaos)
    chaos.flaky.push(Reply.error(502, "A broke"), Reply.error(429, "A is busy", headers={"retry-after": "120"}))
    assert _send(chaos, CLIENTS[0], key, "chaos/visible", False).text == "served by b"
    assert _send(chaos, CLIENTS[0], key, "chaos/visible", False).text == "served by b"
    r = chaos.admin("GET", "/upstreams")
    assert r.status_code == 200, r.text
    states = {d["deployment"]: d for d in r.json()["data"]["deployments"]}
    a, b = states["chaos/visible#0"], states["chaos/visible#1"]
    assert a["state"] == "cooling" and a["failures_in_window"] == 2
    assert 100 < a["cooling_until"] - time.time() <= 120
    assert [e["message"][:8] for e in a["last_errors"]] == ["HTTP 429", "HTTP 502"]
    assert (b["state"], b["weight"], b["cooling_until"]) == ("healthy", 0, None)
    assert a["probe"] is None and a["next_probe_at"] is None  # no probe: nothing to show
    assert b["next_probe_at"] is None


def _watched(chaos: Chaos) -> dict[str, Any]:
    """chaos/watched#0 once the prober has planned its next probe (it does within a tick of the cooldown)."""
    deadline = time.monotonic() + 15
    while True:
        r = chaos.admin("GET", "/upstreams")
        assert r.status_code == 200, r.text
        state: dict[str, Any] = {d["deployment"]: d for d in r.json()["data"]["deployments"]}["chaos/watched#0"]
        if state["next_probe_at"] is not None or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def test_the_operator_sees_when_a_cooling_deployment_is_probed_next(chaos: Chaos) -> None:
    key = _fresh(chaos)
    chaos.flaky.push(Reply.error(429, "A is busy", headers={"retry-after": "600"}))
    before = time.time()
    assert _send(chaos, CLIENTS[0], key, "chaos/watched", False).text == "served by b"
    a = _watched(chaos)
    assert a["state"] == "cooling" and a["probe"] == "models"
    # Planned one probe interval after the cooldown began: in the future, and before the cooldown ends.
    assert a["next_probe_at"] is not None, a
    assert time.time() < a["next_probe_at"] <= time.time() + WATCH_PROBE
    assert a["next_probe_at"] >= before + WATCH_PROBE - 30  # within a generous slack of one interval
    assert a["next_probe_at"] < a["cooling_until"]
    console = ConsoleClient(chaos.server.media_url)
    try:
        signed = console.post_form("/admin/sign-in", {"admin_token": ADMIN})
        assert signed.status_code == 303, signed.text
        page = console.get("/admin/upstreams").text
    finally:
        console.close()
    seconds = [float(s) for s in re.findall(r'class="muted next-probe">next probe in ([0-9.]+) s<', page)]
    assert len(seconds) == 1 and WATCH_PROBE - 60 < seconds[0] <= WATCH_PROBE, seconds
