"""The overdraw bound of docs/api/text-gateway.md (Billing), measured (issue 9 item 7, issue 20 rule 3): a team
goes below zero only by what requests cost above their estimate. The client sends no cap. The upstream honours
whatever output cap it is sent and, sent none, answers the model's maximum output (the catalog's `max_output_tokens`,
which no real model passes). The gateway adds no cap while the team's credit covers that maximum, and caps
the answer to what the credit covers once it does not (down to `credit.min_output_tokens`, then 402). Many
concurrent requests against a balance worth a few of them must then leave the team at no less than
-(admitted requests x the input counted above its estimate), on the fast and the translated paths."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx
import pytest
from aiohttp import web

from tests.integration.money.helpers import CONFIG_TOML, admin, server, team_with_key
from tests.support.databases import BACKENDS, migrated_database_url
from tests.support.fake_upstream import ServerThread

MODEL_MAX = 100  # the catalog's max_output_tokens of every model here
MIN_CAP = 10  # credit.min_output_tokens: a short team's last request runs capped between 10 and 100 tokens
INPUT_RATE, OUTPUT_RATE = 1, 2  # micro-USD per token (1 and 2 USD per million)
CONCURRENT = 30
BALANCE_MICROS = 3_050  # about fifteen requests' worth at the model's maximum, and a remainder


class CapHonouringUpstream:
    """One fake for the three upstream kinds: it answers with exactly the output cap it was sent (the model's
    maximum when sent none) and reports `input_tokens` input tokens."""

    def __init__(self, input_tokens: int) -> None:
        self.input_tokens = input_tokens
        self.caps_seen: list[int | None] = []
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._chat)
        app.router.add_post("/v1/responses", self._responses)
        app.router.add_post("/v1/messages", self._messages)
        self.server = ServerThread(app, name="cap-honouring-upstream")

    async def _read_cap(self, request: web.Request, *fields: str) -> int:
        body: dict[str, Any] = await request.json()
        cap = next((int(body[f]) for f in fields if isinstance(body.get(f), int)), None)
        self.caps_seen.append(cap)
        await asyncio.sleep(0.3)  # keep requests in flight together
        return MODEL_MAX if cap is None else cap

    async def _chat(self, request: web.Request) -> web.Response:
        out = await self._read_cap(request, "max_completion_tokens", "max_tokens")
        usage = {"prompt_tokens": self.input_tokens, "completion_tokens": out}
        usage["total_tokens"] = usage["prompt_tokens"] + out
        message = {"role": "assistant", "content": "word " * 3}
        choice = {"index": 0, "message": message, "finish_reason": "length"}
        return web.json_response(
            {"id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "m", "choices": [choice]}
            | {"usage": usage}
        )

    async def _responses(self, request: web.Request) -> web.Response:
        out = await self._read_cap(request, "max_output_tokens")
        text = {"type": "output_text", "text": "word " * 3, "annotations": []}
        item = {"type": "message", "id": "msg_1", "status": "completed", "role": "assistant", "content": [text]}
        usage = {
            "input_tokens": self.input_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": out,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": self.input_tokens + out,
        }
        return web.json_response(
            {"id": "resp_1", "object": "response", "created_at": 1, "status": "completed", "model": "m"}
            | {"output": [item], "usage": usage}
        )

    async def _messages(self, request: web.Request) -> web.Response:
        out = await self._read_cap(request, "max_tokens")
        return web.json_response(
            {"id": "msg_1", "type": "message", "role": "assistant", "model": "m"}
            | {"content": [{"type": "text", "text": "word " * 3}], "stop_reason": "max_tokens"}
            | {"stop_sequence": None, "usage": {"input_tokens": self.input_tokens, "output_tokens": out}}
        )


def _config(tmp: Path, upstream: CapHonouringUpstream) -> dict[str, str]:
    base = upstream.server.base_url
    models = []
    for model_id, kind in (("fake/chat", "openai_chat"), ("fake/responses", "openai_responses")):
        models.append((model_id, kind, f"{base}/v1"))
    models.append(("fake/anthropic", "anthropic", base))
    catalog = tmp / "catalog.toml"
    catalog.write_text(
        "".join(
            f"""
[[text_models]]
id = "{model_id}"
prices = {{ input = "{INPUT_RATE}", output = "{OUTPUT_RATE}" }}
max_output_tokens = {MODEL_MAX}
deployments = [{{ kind = "{kind}", base_url = "{url}", model = "m" }}]
"""
            for model_id, kind, url in models
        )
    )
    config = tmp / "config.toml"
    config.write_text(CONFIG_TOML)
    return {
        "MODELPORT_CATALOG": str(catalog),
        "MODELPORT_CONFIG": str(config),
        "MODELPORT_ADMIN_TOKEN": "money-admin-token-0123456789-abcdef",
        "MODELPORT_DEMO_BALANCE_USD": "0",
        "MODELPORT_CREDIT__MIN_OUTPUT_TOKENS": str(MIN_CAP),
    }


# (client path, model): each upstream kind on its fast path, and two translated pairs.
CASES = [
    ("/v1/chat/completions", "fake/chat"),
    ("/v1/responses", "fake/responses"),
    ("/v1/chat/completions", "fake/anthropic"),
    ("/v1/responses", "fake/chat"),
]


def _body(path: str, model: str) -> dict[str, Any]:
    if path == "/v1/responses":
        return {"model": model, "input": "Say many words."}
    return {"model": model, "messages": [{"role": "user", "content": "Say many words."}]}


async def _burst(url: str, body: dict[str, Any], key: str) -> list[int]:
    async with httpx.AsyncClient(timeout=60) as client:
        answers = await asyncio.gather(
            *(client.post(url, json=body, headers={"Authorization": f"Bearer {key}"}) for _ in range(CONCURRENT))
        )
    return [a.status_code for a in answers]


async def _settled_balance(running: Any, team: str, charges: int) -> int:
    """The balance in micro-USD once every admitted request's charge is in the ledger (settlements are
    batched): the top-up plus the charges, exact (the shown balance is rounded)."""
    deadline = time.monotonic() + 30
    while True:
        entries = admin(running, "GET", f"/teams/{team}/ledger?limit=1000").json()["data"]["entries"]
        charged = [int(str(e["amount_micros"])) for e in entries if e["kind"] == "charge"]
        if len(charged) >= charges:
            return BALANCE_MICROS + sum(charged)
        assert time.monotonic() < deadline, entries
        await asyncio.sleep(0.1)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("input_tokens", [2, 40], ids=["input-within-estimate", "input-above-estimate"])
async def test_overdraw_stays_within_the_documented_bound(tmp_path: Path, input_tokens: int, backend: str) -> None:
    upstream = CapHonouringUpstream(input_tokens)
    upstream.server.start()
    try:
        env = _config(tmp_path, upstream)
        async with migrated_database_url(backend, tmp_path) as db_url:
            env["MODELPORT_DATABASE_URL"] = db_url
            await _run_cases(tmp_path, env, input_tokens)
        # Teams with credit for the model's maximum got no cap on the fast paths (the translated Messages
        # upstream needs one: the maximum); the last requests of a team short of it got what it covered.
        assert None in upstream.caps_seen
        assert any(cap is not None and MIN_CAP <= cap < MODEL_MAX for cap in upstream.caps_seen), upstream.caps_seen
    finally:
        upstream.server.stop()


async def _run_cases(tmp_path: Path, env: dict[str, str], input_tokens: int) -> None:
    with server(tmp_path, env) as running:
        for n, (path, model) in enumerate(CASES):
            team = f"overdraw-{n}"
            key = team_with_key(running, team, None)
            topup = {"amount_usd": f"{BALANCE_MICROS / 1_000_000:.6f}"}
            assert admin(running, "POST", f"/teams/{team}/topups", json=topup).status_code == 200
            statuses = await _burst(running.text_url + path, _body(path, model), key)
            admitted = statuses.count(200)
            assert set(statuses) <= {200, 402}, statuses
            assert 0 < admitted < CONCURRENT, statuses  # the balance ran out mid-burst
            balance = await _settled_balance(running, team, admitted)
            # Output is held to what the estimate assumed (the model's maximum, or the cap the credit
            # covered); only input counted above its estimate (at most all of it: the estimate is never
            # negative) can take the team below zero.
            bound = admitted * input_tokens * INPUT_RATE
            assert balance >= -bound, (path, model, balance, bound, admitted)
            if input_tokens == 2:  # "Say many words." is estimated at 3 or more tokens: no overdraw at all
                assert balance >= 0, (path, model, balance)
