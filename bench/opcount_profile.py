"""Where a text request's time goes, counted: Python opcodes per request in the gateway's event loop, by step.

    .venv/bin/python bench/opcount_profile.py                          # markdown table, ~1 minute
    .venv/bin/python bench/opcount_profile.py --json /tmp/after.json --compare /tmp/before.json
    .venv/bin/python bench/opcount_profile.py --functions 40           # and the 40 costliest functions

A deterministic profile (issue 27 item 3): `modelport serve` runs under `_opcount_launcher.py`, which counts
every Python opcode the event loop's thread executes, per function, between two signals; the client sends a
fixed batch of requests in between (after an uncounted warm-up, as `instr_guard.py` does, with the same
launcher settings: writers flush by count, periodic reads once at start). Counts do not depend on the
machine's load or clock; sampling profilers (py-spy) do. An opcode is not an instruction (a dict lookup and a
call both count one), so the table says which steps run the most Python, and `instr_guard.py` says what it
all costs. The SQLite writer's thread (mostly C) is not in it.

Steps are the code's modules, named in `STEPS` (the first matching prefix of the file's path under
`site-packages/` or `src/modelport/`), and dataclasses' generated `__init__`s by their class (`CLASS_STEPS`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import sys
import tempfile
from collections import Counter
from pathlib import Path

import _procs
import aiohttp

PROMPT = [{"role": "user", "content": "Say hello in one short sentence."}]
WORKLOADS = {  # name: (path, model, stream)
    "chat fast": ("/v1/chat/completions", "bench/fast", False),
    "chat fast, 16-chunk stream": ("/v1/chat/completions", "bench/fast", True),
    "Chat -> Messages": ("/v1/chat/completions", "bench/translated", False),
    "messages fast": ("/v1/messages", "bench/translated", False),
    "messages fast, 16-chunk stream": ("/v1/messages", "bench/translated", True),
    "responses fast": ("/v1/responses", "bench/responses", False),
    "responses fast, 16-chunk stream": ("/v1/responses", "bench/responses", True),
}
STEPS: tuple[tuple[str, str], ...] = (
    ("aiohttp", "aiohttp: the upstream request and its answer (the bare proxy's too)"),
    ("uvicorn", "uvicorn: HTTP parsing and writing (the bare proxy's too)"),
    ("multidict", "aiohttp: the upstream request and its answer (the bare proxy's too)"),
    ("yarl", "aiohttp: the upstream request and its answer (the bare proxy's too)"),
    ("stdlib", "asyncio: tasks, events, futures (the bare proxy's too)"),
    ("starlette", "entry: dispatch, request id, Request object"),
    ("modelport/web/http_protocol.py", "our HTTP protocol: header size, timeouts, connection cap"),
    ("modelport/gateway/dispatch.py", "entry: dispatch, request id, Request object"),
    ("modelport/apps/", "entry: dispatch, request id, Request object"),
    ("modelport/web/request_id.py", "entry: dispatch, request id, Request object"),
    ("modelport/ids.py", "entry: dispatch, request id, Request object"),
    ("modelport/web/deps.py", "auth: key from headers, cached key check"),
    ("modelport/accounts/", "auth: key from headers, cached key check"),
    ("modelport/web/body.py", "body: read, JSON, depth check"),
    ("modelport/core/json_depth.py", "body: read, JSON, depth check"),
    ("modelport/gateway/headers.py", "decode: headers, canonical request, validation"),
    ("modelport/core/validate.py", "decode: headers, canonical request, validation"),
    ("modelport/gateway/models_route.py", "decode: headers, canonical request, validation"),
    ("modelport/catalog/", "decode: headers, canonical request, validation"),
    ("modelport/gateway/metering.py", "metering: limits, credit hold, settlement, cost"),
    ("modelport/gateway/output_hold.py", "metering: limits, credit hold, settlement, cost"),
    ("modelport/ratelimit/", "metering: limits, credit hold, settlement, cost"),
    ("modelport/billing/credit.py", "metering: limits, credit hold, settlement, cost"),
    ("modelport/billing/pricing.py", "metering: limits, credit hold, settlement, cost"),
    ("modelport/billing/settlement.py", "metering: limits, credit hold, settlement, cost"),
    ("modelport/gateway/own_media.py", "upstream call: own media, routing, body, headers"),
    ("modelport/gateway/routing.py", "upstream call: own media, routing, body, headers"),
    ("modelport/gateway/upstream_call.py", "upstream call: own media, routing, body, headers"),
    ("modelport/gateway/model_name.py", "upstream call: own media, routing, body, headers"),
    ("modelport/upstreams/", "upstream call: own media, routing, body, headers"),
    ("modelport/gateway/relay.py", "relay: usage, translation, SSE"),
    ("modelport/core/", "relay: usage, translation, SSE"),
    ("modelport/gateway/answer.py", "answer: headers, hang-up watch"),
    ("modelport/web/disconnect.py", "answer: headers, hang-up watch"),
    ("modelport/gateway/logsink.py", "request log row (queued for the writer)"),
    ("modelport/requestlog/", "request log row (queued for the writer)"),
    ("modelport/storage/", "request log row (queued for the writer)"),
    ("modelport/gateway/pipeline.py", "pipeline: the order of the steps, context, outcome"),
    ("modelport/gateway/call_metrics.py", "metrics (off: no port)"),
    ("modelport/metrics.py", "metrics (off: no port)"),
)
# Decoding lives in each protocol's package; its usage/response modules are the relay's.
_PROTOCOL_DECODE = re.compile(r"modelport/protocols/[^/]+/(request_decode|codec|content|tools)")
CLASS_STEPS = {
    "entry: dispatch, request id, Request object": {"Request"},
    "decode: headers, canonical request, validation": {"CanonicalRequest", "TextPart", "Message", "ReasoningConfig"},
    "metering: limits, credit hold, settlement, cost": {
        "GcraStep",
        "GcraState",
        "Decision",
        "Lease",
        "Allocation",
        "OutputHold",
        "Admission",
        "Settlement",
    },
    "upstream call: own media, routing, body, headers": {"UpstreamReply", "OpenCall", "Candidate"},
    "relay: usage, translation, SSE": {"Usage", "Relayed", "SSEEvent"},
    "request log row (queued for the writer)": {"LogRecord"},
    "pipeline: the order of the steps, context, outcome": {"Outcome", "RequestContext", "Timings"},
}


def step_of(filename: str) -> str:
    if filename.startswith("<dataclass "):
        name = filename.removeprefix("<dataclass ").removesuffix(">")
        return next((step for step, names in CLASS_STEPS.items() if name in names), "other")
    match = re.search(r"site-packages/([^/]+)", filename)
    where = match.group(1) if match else None
    if where is None:
        mine = re.search(r"src/(modelport/.*)", filename)
        if mine is not None:
            where = mine.group(1)
            if _PROTOCOL_DECODE.search(filename):
                return "decode: headers, canonical request, validation"
            if where.startswith("modelport/protocols/"):
                return "relay: usage, translation, SSE"
        elif re.search(r"/python3\.\d+/", filename):
            where = "stdlib"
    if where is None:
        return "other"
    return next((step for prefix, step in STEPS if where.startswith(prefix)), "other")


async def _send(session: aiohttp.ClientSession, url: str, headers: dict[str, str], body: bytes) -> None:
    async with session.post(url, data=body, headers=headers) as response:
        payload = await response.read()
    if response.status != 200:
        raise RuntimeError(f"{url}: {response.status} {payload[:300]!r}")


async def count_workload(
    gateway: _procs.Proc, out: Path, path: str, model: str, stream: bool, *, warmup: int, requests: int
) -> list[list[object]]:
    """The per-function counts of `requests` identical requests (after `warmup` more)."""
    body_obj: dict[str, object] = (
        {"model": model, "input": PROMPT, "max_output_tokens": 16}
        if path == "/v1/responses"
        else {"model": model, "messages": PROMPT, "max_tokens": 16}
    )
    if stream:
        body_obj["stream"] = True
    body = json.dumps(body_obj).encode()
    headers = {"content-type": "application/json", "authorization": f"Bearer {gateway.extra['key']}"}
    if path == "/v1/messages":
        headers["anthropic-version"] = "2023-06-01"
    url = gateway.url + path
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=4)) as session:

        async def run(n: int) -> None:
            queue = iter(range(n))

            async def worker() -> None:
                for _ in queue:
                    await _send(session, url, headers, body)

            await asyncio.gather(*(worker() for _ in range(4)))

        await run(warmup)
        await asyncio.sleep(1.0)  # the warm-up's batch writes land outside the count
        _forget(out)
        os.kill(gateway.process.pid, signal.SIGUSR1)
        await asyncio.sleep(0.3)
        await run(requests)
        await asyncio.sleep(1.5)  # the last rows queued: each batch of 10 is written as it fills
        os.kill(gateway.process.pid, signal.SIGUSR2)
        for _ in range(100):
            if _written(out):
                break
            await asyncio.sleep(0.1)
    return _load(out)


def _forget(out: Path) -> None:
    out.unlink(missing_ok=True)


def _written(out: Path) -> bool:
    return out.exists() and out.stat().st_size > 0


def _load(out: Path) -> list[list[object]]:
    rows: list[list[object]] = json.loads(out.read_text())
    return rows


async def profile(args: argparse.Namespace) -> dict[str, dict[str, object]]:
    upstream = _procs.start_fake_upstream(delay_ms=0, chunks=16)
    data_dir = Path(tempfile.mkdtemp(prefix="modelport-opcount-"))
    out = data_dir / "opcount.json"
    gateway = _procs.start_gateway(
        data_dir,
        upstream.url,
        workers=1,
        database_url=None,
        extra_env={**_procs.COUNTING_ENV, "MODELPORT_OPCOUNT_OUT": str(out)},
        launcher=str(_procs.BENCH_DIR / "_opcount_launcher.py"),
        serve_args=["--no-workers"],
        timeout_scale=3.0,
    )
    results: dict[str, dict[str, object]] = {}
    try:
        for name, (path, model, stream) in WORKLOADS.items():
            rows = await count_workload(gateway, out, path, model, stream, warmup=args.warmup, requests=args.requests)
            steps: Counter[str] = Counter()
            functions: Counter[str] = Counter()
            for filename, line, function, count, _calls in rows:
                steps[step_of(str(filename))] += int(str(count))
                short = re.sub(r".*(site-packages|src|python3\.\d+)/", "", str(filename))
                functions[f"{short}:{line} {function}"] += int(str(count))
            n = args.requests
            results[name] = {
                "total": sum(steps.values()) / n,
                "steps": {step: count / n for step, count in steps.items()},
                "functions": {fn: count / n for fn, count in functions.most_common(200)},
            }
            print(f"  {name}: {results[name]['total']:.0f} opcodes per request", flush=True)
    finally:
        gateway.stop(timeout=60)
        upstream.stop()
    return results


def _steps(result: dict[str, object]) -> dict[str, float]:
    steps = result["steps"]
    assert isinstance(steps, dict)
    return {str(k): float(v) for k, v in steps.items()}


def table(results: dict[str, dict[str, object]], before: dict[str, dict[str, object]] | None) -> str:
    names = list(results)
    order = sorted(
        {step for r in results.values() for step in _steps(r)}, key=lambda s: -_steps(results[names[0]]).get(s, 0.0)
    )
    head = "| step | " + " | ".join(names) + " |"
    lines = [head, "|---" * (len(names) + 1) + "|"]

    def cell(name: str, step: str | None) -> str:
        now = _steps(results[name]).get(step, 0.0) if step else float(str(results[name]["total"]))
        total = float(str(results[name]["total"]))
        text = f"{now:,.0f}" + (f" ({100 * now / total:.1f} %)" if step else "")
        if before is not None and name in before:
            was = _steps(before[name]).get(step, 0.0) if step else float(str(before[name]["total"]))
            text = f"{was:,.0f} → {text}"
        return text

    for step in order:
        lines.append(f"| {step} | " + " | ".join(cell(name, step) for name in names) + " |")
    lines.append("| **opcodes per request** | " + " | ".join(f"**{cell(name, None)}**" for name in names) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=100, help="counted requests per workload")
    parser.add_argument("--warmup", type=int, default=40, help="uncounted requests before each count")
    parser.add_argument("--json", type=Path, default=None, help="write the counts here")
    parser.add_argument("--compare", type=Path, default=None, help="an earlier --json: before → after per step")
    parser.add_argument("--functions", type=int, default=0, help="also list the N costliest functions per workload")
    args = parser.parse_args()
    results = asyncio.run(profile(args))
    if args.json is not None:
        args.json.write_text(json.dumps(results, indent=1))
    before = json.loads(args.compare.read_text()) if args.compare is not None else None
    print()
    print(table(results, before))
    for name, result in results.items() if args.functions else ():
        functions = result["functions"]
        assert isinstance(functions, dict)
        print(f"\n{name}: the {args.functions} costliest functions (opcodes per request)")
        for function, count in list(functions.items())[: args.functions]:
            print(f"  {float(count):8.0f}  {function}")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
