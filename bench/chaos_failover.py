"""Chaos run of text failover (issue 39): two deployments of one model, one failing in turn every 30 s.

    .venv/bin/python bench/chaos_failover.py                 # the 10-minute run (figures in bench/README.md)
    .venv/bin/python bench/chaos_failover.py --seconds 40    # a smoke run

A real `modelport serve` (SQLite) routes `chaos/bench` over deployments A and B, two local chaos upstreams
speaking Chat Completions. In each period one of them fails every request, in a rotating way (500, 429 with
`Retry-After`, a reset connection, an error event before the first content, no first byte within the
deployment's first-byte timeout, a 200 that is not JSON), and the other answers. Clients send Chat
requests (half streamed) without pause. At the end the server is stopped (its writers drain) and its
database read: every request must have one log row, every answer must be clean (no client-visible error),
and the money must add up (the team's balance fell by exactly the sum of the logged costs: drift 0).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import _procs
import aiohttp
from aiohttp import web

REPO = Path(__file__).resolve().parents[1]
FAILURES = ("500", "429", "reset", "error_event", "no_first_byte", "bad_json")
DEMO_USD = 1000  # 20 micro-USD per answer (10 input and 5 output tokens): no run comes near it
FIRST_BYTE = 2.0


@dataclass
class Upstream:
    """One chaos deployment: fails every request while `failing()` says so, a different way each time."""

    index: int
    period: float
    started: float
    kinds: itertools.cycle[str] = field(default_factory=lambda: itertools.cycle(FAILURES))
    served: int = 0
    failed: int = 0

    def failing(self) -> bool:
        return int((time.monotonic() - self.started) // self.period) % 2 == self.index

    async def handle(self, request: web.Request) -> web.StreamResponse:
        body = await request.json()
        stream = bool(body.get("stream"))
        if self.failing():
            self.failed += 1
            kind = next(self.kinds)
            if kind == "500":
                return web.json_response({"error": {"message": "boom", "type": "server_error"}}, status=500)
            if kind == "429":
                return web.json_response({"error": {"message": "slow"}}, status=429, headers={"retry-after": "1"})
            if kind == "reset" and request.transport is not None:
                request.transport.abort()
                return web.Response()
            if kind == "no_first_byte":
                await asyncio.sleep(FIRST_BYTE + 1)
            if kind == "bad_json" and not stream:
                return web.Response(body=b'{"id": "x", "choices": [', content_type="application/json")
            if kind in ("error_event", "bad_json") and stream:
                resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
                await resp.prepare(request)
                await resp.write(_chunk({"role": "assistant", "content": ""}))
                await resp.write(b'data: {"error": {"message": "quota exceeded", "type": "server_error"}}\n\n')
                await resp.write_eof()
                return resp
        self.served += 1
        return await _answer(request, stream, body.get("model", "m"))


def _chunk(delta: dict[str, object], finish: str | None = None, usage: dict[str, int] | None = None) -> bytes:
    choice = {"index": 0, "delta": delta, "finish_reason": finish}
    data: dict[str, object] = {"id": "c1", "object": "chat.completion.chunk", "model": "m", "choices": [choice]}
    if usage is not None:
        data["usage"] = usage
    return b"data: " + json.dumps(data).encode() + b"\n\n"


USAGE = {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}


async def _answer(request: web.Request, stream: bool, model: str) -> web.StreamResponse:
    if not stream:
        message = {"role": "assistant", "content": "fine"}
        return web.json_response(
            {
                "id": "c1",
                "object": "chat.completion",
                "model": model,
                "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
                "usage": USAGE,
            }
        )
    resp = web.StreamResponse(headers={"content-type": "text/event-stream"})
    await resp.prepare(request)
    await resp.write(_chunk({"role": "assistant", "content": ""}))
    for word in ("all ", "is ", "fine"):
        await resp.write(_chunk({"content": word}))
    await resp.write(_chunk({}, "stop", USAGE))
    await resp.write(b"data: [DONE]\n\n")
    await resp.write_eof()
    return resp


@dataclass
class Tally:
    sent: int = 0
    clean: int = 0
    visible_errors: int = 0
    examples: list[str] = field(default_factory=list)


async def _client(session: aiohttp.ClientSession, url: str, key: str, until: float, tally: Tally, n: int) -> None:
    headers = {"Authorization": f"Bearer {key}"}
    for i in itertools.count():
        if time.monotonic() >= until:
            return
        stream = (i + n) % 2 == 0
        body = {"model": "chaos/bench", "messages": [{"role": "user", "content": "hi"}], "stream": stream}
        tally.sent += 1
        try:
            async with session.post(url + "/v1/chat/completions", json=body, headers=headers) as r:
                text = await r.text()
                ok = r.status == 200 and ("[DONE]" in text and '"error"' not in text if stream else "fine" in text)
        except aiohttp.ClientError as exc:
            ok, text = False, repr(exc)
        if ok:
            tally.clean += 1
        else:
            tally.visible_errors += 1
            if len(tally.examples) < 5:
                tally.examples.append(text[:200])


def _start_server(data_dir: Path, a: int, b: int) -> tuple[subprocess.Popen[str], str, str]:
    catalog = data_dir / "catalog.toml"
    deployment = (
        'kind = "openai_chat", model = "m", first_byte_timeout_seconds = {fb}, base_url = "http://127.0.0.1:{port}/v1"'
    )
    catalog.write_text(
        '[[text_models]]\nid = "chaos/bench"\nprices = { input = "1", output = "2" }\ndeployments = [\n'
        + ",\n".join("  { " + deployment.format(fb=FIRST_BYTE, port=p) + " }" for p in (a, b))
        + "\n]\n"
    )
    config = data_dir / "config.toml"
    config.write_text(_procs.CONFIG_TOML)  # a tier whose limits no run reaches
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
    env.update(
        {
            "MODELPORT_CONFIG": str(config),
            "MODELPORT_DATA_DIR": str(data_dir),
            "MODELPORT_CATALOG": str(catalog),
            "MODELPORT_DEMO_BALANCE_USD": str(DEMO_USD),
            "MODELPORT_LOG_LEVEL": "WARNING",
            "MODELPORT_UPSTREAM_COOLDOWN_SECONDS": "5",
        }
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "modelport", "serve", "--media-port", "0", "--text-port", "0", "--no-workers"],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    assert process.stdout is not None
    url = key = None
    while key is None:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError("serve exited")
        if m := re.match(r"^text gateway:\s+(http://\S+)", line):
            url = m.group(1)
        if m := re.match(r"^demo API key:\s+(\S+)", line):
            key = m.group(1)
    assert url is not None
    return process, url, key


async def main(seconds: float, period: float, clients: int) -> dict[str, object]:
    started = time.monotonic()
    upstreams = [Upstream(i, period, started) for i in range(2)]
    runners, ports = [], []
    for upstream in upstreams:
        app = web.Application()
        app.router.add_post("/{tail:.*}", upstream.handle)
        runner = web.AppRunner(app, access_log=None, shutdown_timeout=0.5)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        runners.append(runner)
        ports.append(site._server.sockets[0].getsockname()[1])  # type: ignore[union-attr]
    data_dir = Path(tempfile.mkdtemp(prefix="modelport-chaos-"))
    process, url, key = await asyncio.to_thread(_start_server, data_dir, ports[0], ports[1])
    tally = Tally()
    try:
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
            until = time.monotonic() + seconds
            await asyncio.gather(*(_client(session, url, key, until, tally, n) for n in range(clients)))
    finally:
        process.send_signal(signal.SIGTERM)  # the writers drain: every row and settlement lands
        await asyncio.to_thread(process.wait, 60)
        for runner in runners:
            await runner.cleanup()
    db = sqlite3.connect(data_dir / "modelport.db")
    rows, logged_cost = db.execute("SELECT count(*), coalesce(sum(cost_micros), 0) FROM request_logs").fetchone()
    statuses = dict(db.execute("SELECT status, count(*) FROM request_logs GROUP BY status").fetchall())
    balance, frozen = db.execute("SELECT balance_micros, frozen_micros FROM teams WHERE name = 'demo'").fetchone()
    spent = DEMO_USD * 1_000_000 - balance
    return {
        "seconds": seconds,
        "period_seconds": period,
        "clients": clients,
        "requests": tally.sent,
        "clean_answers": tally.clean,
        "client_visible_errors": tally.visible_errors,
        "error_examples": tally.examples,
        "log_rows": rows,
        "log_statuses": statuses,
        "upstream_failures_injected": sum(u.failed for u in upstreams),
        "upstream_answers": sum(u.served for u in upstreams),
        "spent_micros": spent,
        "logged_cost_micros": logged_cost,
        "money_drift_micros": spent - logged_cost,
        "frozen_micros_left": frozen,
    }


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=600.0)
    parser.add_argument("--period", type=float, default=30.0, help="seconds each deployment fails in turn")
    parser.add_argument("--clients", type=int, default=4)
    result = asyncio.run(main(**vars(parser.parse_args())))
    print(json.dumps(result, indent=2))
    ok = result["client_visible_errors"] == 0 and result["log_rows"] == result["requests"]
    sys.exit(0 if ok and result["money_drift_micros"] == 0 else 1)
