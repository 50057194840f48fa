"""Every worked example of docs/api/billing.md, through a real `modelport serve` against a fake upstream that
reports usage in the recorded shapes (Anthropic's `cache_creation` breakdown and `usage.service_tier`, the
OpenAI protocols' top-level `service_tier`), streamed and not. Each example checks the cost the answer
carries, the log item (`GET /v1/logs`: tokens, `cost`, `price_tier`) and the money invariants: the ledger's
charges equal the logged costs, and the balance equals the top-up minus the charges.

One server for the module (start-ups are the suite's cost); every test gets a fresh team and key.
"""

from __future__ import annotations

import csv
import io
import itertools
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import ROUND_DOWN, Decimal
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.console import ConsoleClient
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import RunningServer, run_server

ADMIN_TOKEN = "billing-examples-admin-token-0123456789"
TOPUP_USD = "100"
TOPUP_MICROS = 100_000_000

# The catalog of docs/api/billing.md's examples (USD per million tokens = micro-USD per token).
OPENAI_PRICES = (
    '{ input = "1.25", output = "10", cache_read = "0.125", '
    'long_context = { above_input_tokens = 272000, input = "2.5", output = "15", cache_read = "0.25" }, '
    'service_tiers = { priority = { input = "2.5", output = "20", cache_read = "0.25", '
    'long_context = { above_input_tokens = 272000, input = "5", output = "30" } }, '
    'flex = { input = "0.625", output = "5", cache_read = "0.0625" } } }'
)
# Anthropic: cache prices left unset (derived: read 0.3, 5-minute write 3.75, 1-hour write 6; long
# context: 0.6, 7.5, 12).
ANTHROPIC_PRICES = (
    '{ input = "3", output = "15", long_context = { above_input_tokens = 200000, input = "6", output = "22.5" } }'
)


def catalog_toml(base: str) -> str:
    models = {
        "openai/gpt-chat": ("openai_chat", base + "/v1", OPENAI_PRICES),
        "openai/gpt-resp": ("openai_responses", base + "/v1", OPENAI_PRICES),
        "anthropic/claude": ("anthropic", base, ANTHROPIC_PRICES),
        "openai/gpt-repriced": ("openai_chat", base + "/v1", '{ input = "1.25", output = "10" }'),
        # A long-context threshold of 100 tokens at a rate no small balance covers: for the hold.
        "anthropic/claude-tiny-threshold": (
            "anthropic",
            base,
            '{ input = "1", output = "1", long_context = { above_input_tokens = 100, input = "1000" } }',
        ),
    }
    return "\n".join(
        f'''[[text_models]]
id = "{model_id}"
max_output_tokens = 1000
prices = {prices}
deployments = [{{ kind = "{kind}", base_url = "{url}", model = "up-{kind}" }}]
'''
        for model_id, (kind, url, prices) in models.items()
    )


@dataclass
class Gateway:
    server: RunningServer
    upstream: FakeUpstream

    def admin(self, method: str, path: str, **kw: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        return httpx.request(method, self.server.media_url + "/admin/v1" + path, headers=headers, timeout=30, **kw)


@pytest.fixture(scope="module")
def gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("billing")
    with FakeUpstream() as upstream:
        catalog = Path(tmp / "catalog.toml")
        catalog.write_text(catalog_toml(upstream.base_url))
        with run_server(
            tmp,
            MODELPORT_CATALOG=str(catalog),
            MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN,
            MODELPORT_DEMO_BALANCE_USD="0",
        ) as server:
            yield Gateway(server, upstream)


@pytest.fixture
def gw(gateway: Gateway) -> Gateway:
    gateway.upstream.reset()
    return gateway


_teams = itertools.count(1)


@dataclass
class Team:
    name: str
    key: str


def new_team(gw: Gateway, usd: str = TOPUP_USD) -> Team:
    name = f"bill-{next(_teams)}"
    assert gw.admin("POST", "/teams", json={"name": name}).status_code == 200
    assert gw.admin("POST", f"/teams/{name}/topups", json={"amount_usd": usd}).status_code == 200
    key: str = gw.admin("POST", f"/teams/{name}/keys", json={}).json()["data"]["key"]
    return Team(name, key)


def ask(gw: Gateway, team: Team, path: str, model: str, stream: bool) -> tuple[int | None, str]:
    """One request; the cost its answer carries (None for a stream) and its raw text."""
    body: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": "Hi"}], "max_tokens": 100}
    if path == "/v1/responses":
        body = {"model": model, "input": "Hi", "max_output_tokens": 100}
    body["stream"] = stream
    if stream and path == "/v1/chat/completions":
        body["stream_options"] = {"include_usage": True}
    url, headers = gw.server.text_url + path, {"Authorization": f"Bearer {team.key}"}
    if not stream:
        r = httpx.post(url, json=body, headers=headers, timeout=30)
        assert r.status_code == 200, r.text
        return int(Decimal(r.headers["x-modelport-cost"]) * 1_000_000), r.text
    with httpx.stream("POST", url, json=body, headers=headers, timeout=30) as r:
        assert r.status_code == 200
        return None, "\n".join(r.iter_lines())


def settled(gw: Gateway, team: Team, requests: int) -> list[dict[str, Any]]:
    """The team's log items once all `requests` are logged and settled, after checking the money invariants."""
    deadline = time.monotonic() + 15
    now = int(time.time())
    while True:
        items: list[dict[str, Any]] = httpx.get(
            gw.server.text_url + "/v1/logs",
            params={"start_time": now - 600, "end_time": now + 600, "page_size": 100},
            headers={"Authorization": f"Bearer {team.key}"},
        ).json()["requests"]
        info = gw.admin("GET", f"/teams/{team.name}").json()["data"]
        if (len(items) >= requests and info["frozen_usd"] == 0) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(items) == requests and info["frozen_usd"] == 0
    entries = gw.admin("GET", f"/teams/{team.name}/ledger?limit=1000").json()["data"]["entries"]
    charges = -sum(e["amount_micros"] for e in entries if e["kind"] == "charge")
    logged = sum(int(Decimal(str(i["cost"])) * 1_000_000) for i in items)
    assert charges == logged  # the ledger's charges equal the logged costs
    assert sum(e["amount_micros"] for e in entries) == TOPUP_MICROS - charges  # balance = top-ups - charges
    shown = Decimal(TOPUP_MICROS - charges).scaleb(-6).quantize(Decimal("0.0001"), rounding=ROUND_DOWN)
    assert Decimal(str(info["balance_usd"])) == shown  # the balance is shown to 4 places, rounded down
    return items


def one(gw: Gateway, path: str, model: str, usage: Usage, stream: bool) -> tuple[dict[str, Any], str]:
    """A fresh team makes one request answered with `usage`: its log item (its cost checked against the
    answer's when not streamed) and the answer's text."""
    team = new_team(gw)
    gw.upstream.push(Reply.text("Paris is the capital.", usage=usage))
    cost, text = ask(gw, team, path, model, stream)
    (item,) = settled(gw, team, 1)
    if cost is not None:
        assert micros(item) == cost
    return item, text


def micros(item: dict[str, Any]) -> int:
    return int(Decimal(str(item["cost"])) * 1_000_000)


def tokens(item: dict[str, Any]) -> tuple[Any, ...]:
    keys = ("prompt_tokens", "completion_tokens", "cached_tokens", "cache_write_tokens", "cache_write_1h_tokens")
    return tuple(item[k] for k in keys)


STREAM = pytest.mark.parametrize("stream", [False, True], ids=["body", "stream"])


@STREAM
def test_example_1_input_and_output(gw: Gateway, stream: bool) -> None:
    usage = Usage(input_tokens=1000, output_tokens=500, service_tier="default")
    item, _ = one(gw, "/v1/chat/completions", "openai/gpt-chat", usage, stream)
    assert micros(item) == 1000 * Decimal("1.25") + 500 * 10 == 6250
    assert tokens(item) == (1000, 500, 0, 0, 0)
    assert item["price_tier"] == "standard"


@STREAM
def test_example_2_cache_reads(gw: Gateway, stream: bool) -> None:
    usage = Usage(input_tokens=10_000, cache_read_tokens=8000, output_tokens=200, service_tier="default")
    item, _ = one(gw, "/v1/chat/completions", "openai/gpt-chat", usage, stream)
    assert micros(item) == 2000 * Decimal("1.25") + 8000 * Decimal("0.125") + 200 * 10 == 5500
    assert tokens(item) == (10_000, 200, 8000, 0, 0)


@STREAM
def test_example_3_anthropic_five_minute_cache_write_derived(gw: Gateway, stream: bool) -> None:
    usage = Usage(
        input_tokens=2100, cache_write_tokens=2000, cache_write_1h_tokens=0, output_tokens=300, service_tier="standard"
    )
    item, text = one(gw, "/v1/messages", "anthropic/claude", usage, stream)
    assert micros(item) == 100 * 3 + 2000 * Decimal("3.75") + 300 * 15 == 12_300
    assert tokens(item) == (2100, 300, 0, 2000, 0)
    assert item["price_tier"] == "standard"
    assert '"ephemeral_5m_input_tokens":2000' in text.replace(" ", "")  # relayed to the Messages client


@STREAM
def test_example_4_anthropic_one_hour_cache_write_and_read(gw: Gateway, stream: bool) -> None:
    usage = Usage(
        input_tokens=14_050,
        cache_read_tokens=10_000,
        cache_write_tokens=4000,
        cache_write_1h_tokens=3000,
        output_tokens=800,
        service_tier="standard",
    )
    item, _ = one(gw, "/v1/messages", "anthropic/claude", usage, stream)
    expected = 50 * 3 + 10_000 * Decimal("0.3") + 1000 * Decimal("3.75") + 3000 * 6 + 800 * 15
    assert micros(item) == expected == 36_900
    assert tokens(item) == (14_050, 800, 10_000, 4000, 3000)


@STREAM
def test_example_5_long_context_crossed_by_one_token(gw: Gateway, stream: bool) -> None:
    at = Usage(input_tokens=200_000, cache_read_tokens=200_000, output_tokens=100, service_tier="standard")
    item, _ = one(gw, "/v1/messages", "anthropic/claude", at, stream)
    assert micros(item) == 200_000 * Decimal("0.3") + 100 * 15 == 61_500
    assert item["price_tier"] == "standard"
    over = Usage(input_tokens=200_001, cache_read_tokens=200_000, output_tokens=100, service_tier="standard")
    item, _ = one(gw, "/v1/messages", "anthropic/claude", over, stream)
    assert micros(item) == 1 * 6 + 200_000 * Decimal("0.6") + 100 * Decimal("22.5") == 122_256
    assert item["price_tier"] == "long_context"


@STREAM
def test_example_6_priority_tier_reported_by_the_upstream(gw: Gateway, stream: bool) -> None:
    usage = Usage(input_tokens=1000, cache_read_tokens=200, output_tokens=100, service_tier="priority")
    item, _ = one(gw, "/v1/chat/completions", "openai/gpt-chat", usage, stream)
    assert micros(item) == 800 * Decimal("2.5") + 200 * Decimal("0.25") + 100 * 20 == 4050
    assert item["price_tier"] == "priority"


@STREAM
def test_example_7_flex_tier_on_responses(gw: Gateway, stream: bool) -> None:
    usage = Usage(input_tokens=1000, output_tokens=100, service_tier="flex")
    item, _ = one(gw, "/v1/responses", "openai/gpt-resp", usage, stream)
    assert micros(item) == 1000 * Decimal("0.625") + 100 * 5 == 1125
    assert item["price_tier"] == "flex"


@STREAM
def test_example_8_priority_tier_over_the_threshold_uses_its_own_long_context_table(gw: Gateway, stream: bool) -> None:
    usage = Usage(input_tokens=300_000, output_tokens=100, service_tier="priority")
    item, _ = one(gw, "/v1/chat/completions", "openai/gpt-chat", usage, stream)
    assert micros(item) == 300_000 * 5 + 100 * 30 == 1_503_000
    assert item["price_tier"] == "priority"


@STREAM
def test_example_9_unknown_tier_is_standard(gw: Gateway, stream: bool) -> None:
    usage = Usage(input_tokens=1000, output_tokens=500, service_tier="scale")
    item, _ = one(gw, "/v1/chat/completions", "openai/gpt-chat", usage, stream)
    assert micros(item) == 6250
    assert item["price_tier"] == "standard"


@STREAM
def test_example_10_translated_request_is_billed_as_the_native_one(gw: Gateway, stream: bool) -> None:
    """A Chat client on an Anthropic deployment: example 4's usage, example 4's cost; the client sees the
    cache writes inside its prompt tokens."""
    usage = Usage(
        input_tokens=14_050,
        cache_read_tokens=10_000,
        cache_write_tokens=4000,
        cache_write_1h_tokens=3000,
        output_tokens=800,
        service_tier="standard",
    )
    item, text = one(gw, "/v1/chat/completions", "anthropic/claude", usage, stream)
    assert micros(item) == 36_900
    assert tokens(item) == (14_050, 800, 10_000, 4000, 3000)
    assert '"prompt_tokens":14050' in text.replace(" ", "")


@STREAM
def test_messages_client_of_an_openai_upstream_sees_its_writes_as_five_minute_ones(gw: Gateway, stream: bool) -> None:
    usage = Usage(input_tokens=1000, cache_write_tokens=300, output_tokens=10, service_tier="default")
    item, text = one(gw, "/v1/messages", "openai/gpt-chat", usage, stream)
    # No cache write rate in the OpenAI table: the input rate.
    assert micros(item) == 1000 * Decimal("1.25") + 10 * 10 == 1350
    compact = text.replace(" ", "")
    assert '"cache_creation":{"ephemeral_5m_input_tokens":300,"ephemeral_1h_input_tokens":0}' in compact


def test_a_price_change_does_not_change_a_logged_cost(gw: Gateway) -> None:
    team = new_team(gw)
    gw.upstream.push(Reply.text("a", usage=Usage(input_tokens=1000, output_tokens=500)))
    ask(gw, team, "/v1/chat/completions", "openai/gpt-repriced", False)
    (before,) = settled(gw, team, 1)
    spec = {
        "prices": {"input": "2.5", "output": "20"},
        "max_output_tokens": 1000,
        "deployments": [{"kind": "openai_chat", "base_url": gw.upstream.base_url + "/v1", "model": "x"}],
    }
    assert gw.admin("PUT", "/models/openai/gpt-repriced", json={"kind": "text", "spec": spec}).status_code == 200
    gw.upstream.push(Reply.text("b", usage=Usage(input_tokens=1000, output_tokens=500)))
    ask(gw, team, "/v1/chat/completions", "openai/gpt-repriced", False)
    items = settled(gw, team, 2)
    by_id = {i["task_id"]: micros(i) for i in items}
    assert by_id[before["task_id"]] == 6250  # as charged then
    assert sorted(by_id.values()) == [6250, 12_500]


def test_the_console_exports_carry_cache_writes_and_the_price_table(gw: Gateway) -> None:
    """`logs.csv` has the log item's new columns; `usage.csv` (the daily rollups) adds them up."""
    team = new_team(gw)
    usage = Usage(
        input_tokens=14_050,
        cache_read_tokens=10_000,
        cache_write_tokens=4000,
        cache_write_1h_tokens=3000,
        output_tokens=800,
        service_tier="standard",
    )
    gw.upstream.push(Reply.text("a", usage=usage), Reply.text("b", usage=usage))
    ask(gw, team, "/v1/messages", "anthropic/claude", False)
    ask(gw, team, "/v1/messages", "anthropic/claude", True)
    settled(gw, team, 2)
    console = ConsoleClient(gw.server.media_url)
    try:
        assert console.sign_in(team.key).status_code in (200, 303)
        logs = list(csv.DictReader(io.StringIO(console.get("/logs.csv").text)))
        assert [(r["cached_tokens"], r["cache_write_tokens"], r["cache_write_1h_tokens"]) for r in logs] == [
            ("10000", "4000", "3000")
        ] * 2
        assert {(r["price_tier"], r["cost_usd"]) for r in logs} == {("standard", "0.036900")}
        (day,) = list(csv.DictReader(io.StringIO(console.get("/usage.csv").text)))
        assert (day["cached_tokens"], day["cache_write_tokens"], day["cache_write_1h_tokens"]) == (
            "20000",
            "8000",
            "6000",
        )
        assert day["cost_usd"] == "0.073800"
    finally:
        console.close()


def test_a_hold_over_the_threshold_is_taken_at_the_long_context_rates(gw: Gateway) -> None:
    """0.1 USD covers a short request's hold, not one whose input estimate (over 100 tokens) is held at
    1,000 USD per million tokens: that one is refused before any upstream call."""
    team = new_team(gw, usd="0.1")
    url, headers = gw.server.text_url + "/v1/messages", {"Authorization": f"Bearer {team.key}"}
    body: dict[str, Any] = {"model": "anthropic/claude-tiny-threshold", "max_tokens": 10}
    gw.upstream.push(Reply.text("short", usage=Usage(input_tokens=5, output_tokens=2)))
    short = httpx.post(url, json={**body, "messages": [{"role": "user", "content": "Hi"}]}, headers=headers)
    assert short.status_code == 200, short.text
    long = httpx.post(url, json={**body, "messages": [{"role": "user", "content": "x" * 2000}]}, headers=headers)
    assert long.status_code == 402, long.text  # at standard rates its hold (2,000 / 4 + 16 + 10) would fit
    assert gw.upstream.call_count("/v1/messages") == 1
