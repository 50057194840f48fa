"""The whole matrix in one run: three protocols, streaming and not, at concurrency 1, 16 and 64, each way.

    .venv/bin/python bench/matrix_bench.py                 # ~10 minutes with the Python peer; JSON in /tmp
    .venv/bin/python bench/matrix_bench.py --short         # ~3 minutes: 1.5 s per phase
    .venv/bin/python bench/matrix_bench.py --only chat chat-stream --concurrency 64 --peer off

Workloads: Chat Completions (`/v1/chat/completions`), Responses (`/v1/responses`) and Messages
(`/v1/messages`), each non-streaming and streaming (16 chunks over the fake's 50 ms). Each runs every way a
server supports it: **direct** to the fake upstream; **bare** through `bare_proxy.py` (path and body relayed,
so it speaks every protocol); modelport's **fast** path (a deployment of the workload's own protocol: the body
relayed with `model` changed) and one **translated** path (Chat in / Messages upstream, Responses in / Chat
upstream, Messages in / Chat upstream); **peer**: LiteLLM's proxy (from `.tools/litellm`, see README), which
serves all three routes (its `/v1/messages` on an OpenAI-compatible model is its own translation).

Per phase: requests/s, the ratio to direct, p50/p99 to the last byte, the server's CPU per request (all its
processes, from /proc), and the machine's idle share during the recorded window (from /proc/stat: what the
two cores had left over; well below the benchmark's own idle means other jobs were running). Prints one
markdown table for the run and the targets of issue 27 (CPU against the bare proxy, added p50 at c=1,
throughput and p99 at c=64) per protocol, each PASS/FAIL; writes JSON (`--out`).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import _load
import _procs

PROMPT = "Say hello in one short sentence."
# Issue 27's targets: gateway CPU against the bare proxy's, latency and throughput against direct.
MAX_CPU_FACTOR_FAST = 2.0  # per non-streaming request at c=64
MAX_CPU_FACTOR_TRANSLATED = 2.5
MAX_CPU_FACTOR_STREAM = 2.0  # per 16-chunk stream (c=64)
MAX_ADDED_P50_OVER_BARE_MS = 0.5  # at c=1, over the bare proxy's added p50
MIN_RATIO_C64 = 0.93
MAX_P99_FACTOR_C64 = 1.5


@dataclass(frozen=True)
class Protocol:
    name: str
    path: str
    fast_model: str  # a deployment of the same protocol
    translated_model: str  # a deployment of another protocol
    translated_label: str

    def body(self, model: str, stream: bool) -> dict[str, Any]:
        if self.name == "responses":
            body: dict[str, Any] = {"model": model, "input": PROMPT, "max_output_tokens": 16}
        else:
            body = {"model": model, "messages": [{"role": "user", "content": PROMPT}], "max_tokens": 16}
        if stream:
            body["stream"] = True
        return body

    def headers(self, key: str | None) -> dict[str, str]:
        """The request headers: JSON, the key when the server wants one, Messages' version header."""
        headers = {"content-type": "application/json"}
        if key:
            headers["authorization"] = f"Bearer {key}"
        if self.name == "messages":
            headers["anthropic-version"] = "2023-06-01"
        return headers

    def complete(self, stream: bool) -> Callable[[bytes], bool]:
        """Whether an answer body is whole: the protocol's last event, or its non-streaming shape."""
        if stream:
            end = {"chat": b"data: [DONE]", "responses": b"response.completed", "messages": b"message_stop"}[self.name]
            return lambda payload: end in payload  # Responses' last event carries the whole response after its name
        marker = {"chat": b'"choices"', "responses": b'"output"', "messages": b'"content"'}[self.name]
        return lambda payload: payload.startswith(b"{") and marker in payload


PROTOCOLS = (
    Protocol("chat", "/v1/chat/completions", "bench/fast", "bench/translated", "Chat -> Messages"),
    Protocol("responses", "/v1/responses", "bench/responses", "bench/fast", "Responses -> Chat"),
    Protocol("messages", "/v1/messages", "bench/translated", "bench/fast", "Messages -> Chat"),
)
WORKLOADS = [(p, stream) for p in PROTOCOLS for stream in (False, True)]
PATHS = ("direct", "bare", "fast", "translated", "peer")


def workload_name(protocol: Protocol, stream: bool) -> str:
    return protocol.name + ("-stream" if stream else "")


@dataclass
class Phase:
    workload: str
    path: str
    concurrency: int
    requests: int
    errors: int
    first_error: str | None
    rps: float
    p50_ms: float
    p99_ms: float
    cpu_ms: float | None  # the server's CPU per request (None: direct)
    idle_share: float  # of the machine's two cores, during the recorded window


class IdleWindow:
    """CPU of one server and the machine's idle share over exactly the recorded window of a phase."""

    def __init__(self, server: _procs.Proc | None) -> None:
        self._pids = server.pids if server is not None else []
        self.cpu = 0.0
        self.idle_share = 0.0

    def __call__(self, opening: bool) -> None:
        cpu = _procs.cpu_seconds(self._pids)
        idle, total = _procs.machine_idle_total()
        if opening:
            self._start = (cpu, idle, total)
            return
        self.cpu = cpu - self._start[0]
        self.idle_share = (idle - self._start[1]) / max(total - self._start[2], 1e-9)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def target_for(protocol: Protocol, stream: bool, path: str, server: _procs.Proc) -> _load.Target:
    model = {"fast": protocol.fast_model, "translated": protocol.translated_model}.get(path, "m")
    body = json.dumps(protocol.body(model, stream)).encode()
    headers = protocol.headers(server.extra.get("key"))
    return _load.Target(server.url + protocol.path, headers, body, stream, protocol.complete(stream))


async def run_matrix(args: argparse.Namespace, servers: dict[str, _procs.Proc]) -> list[Phase]:
    phases: list[Phase] = []
    for protocol, stream in WORKLOADS:
        name = workload_name(protocol, stream)
        if args.only and name not in args.only:
            continue
        for concurrency in args.concurrency:
            for path in PATHS:
                server = servers.get(path)
                if server is None:
                    continue
                window = IdleWindow(None if path == "direct" else server)
                async with _load.new_session(concurrency) as session:
                    sample = await _load.run(
                        session,
                        target_for(protocol, stream, path, server),
                        concurrency=concurrency,
                        seconds=args.seconds,
                        warmup=args.warmup,
                        on_window=window,
                    )
                n = max(sample.count, 1)
                phase = Phase(
                    workload=name,
                    path=path,
                    concurrency=concurrency,
                    requests=sample.count,
                    errors=sample.errors,
                    first_error=sample.first_error,
                    rps=sample.count / sample.elapsed if sample.elapsed else 0.0,
                    p50_ms=_pct(sample.latencies, 0.5) * 1000,
                    p99_ms=_pct(sample.latencies, 0.99) * 1000,
                    cpu_ms=None if path == "direct" else window.cpu * 1000 / n,
                    idle_share=window.idle_share,
                )
                phases.append(phase)
                print(
                    f"  {name:<17} c={concurrency:<3} {path:<11} {phase.rps:8.1f} req/s  p50 {phase.p50_ms:7.2f} ms"
                    f"  cpu {phase.cpu_ms or 0:5.2f} ms  idle {phase.idle_share:4.0%}  errors {phase.errors}",
                    flush=True,
                )
                if sample.first_error:
                    print(f"    first error: {sample.first_error[:200]}", flush=True)
    return phases


def _find(phases: list[Phase], workload: str, path: str, concurrency: int) -> Phase | None:
    return next(
        (p for p in phases if (p.workload, p.path, p.concurrency) == (workload, path, concurrency)),
        None,
    )


def matrix_table(phases: list[Phase], concurrencies: list[int]) -> str:
    """One row per workload and concurrency: each way's throughput ratio to direct, added p50 and CPU per
    request (with modelport's CPU as a multiple of the bare proxy's), and the machine's idle share."""
    present = [p for p in PATHS if any(x.path == p for x in phases)]
    head = ["workload", "c", "direct req/s, p50"]
    labels = {"bare": "bare proxy", "fast": "modelport fast", "translated": "modelport translated", "peer": "LiteLLM"}
    head += [f"{labels[p]}: ratio, +p50, CPU" for p in present if p != "direct"]
    head += ["idle (min-max)"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for protocol, stream in WORKLOADS:
        name = workload_name(protocol, stream)
        for c in concurrencies:
            direct = _find(phases, name, "direct", c)
            if direct is None:
                continue
            bare = _find(phases, name, "bare", c)
            cells = [name, str(c), f"{direct.rps:.0f}/s, {direct.p50_ms:.1f} ms"]
            idles = [direct.idle_share]
            for path in present:
                if path == "direct":
                    continue
                phase = _find(phases, name, path, c)
                if phase is None:
                    cells.append("-")
                    continue
                idles.append(phase.idle_share)
                cpu = f"{phase.cpu_ms:.2f} ms" if phase.cpu_ms is not None else "-"
                if path in ("fast", "translated") and bare is not None and bare.cpu_ms and phase.cpu_ms:
                    cpu += f" ({phase.cpu_ms / bare.cpu_ms:.1f}x)"
                errors = f", {phase.errors} errors" if phase.errors else ""
                cells.append(
                    f"{phase.rps / direct.rps if direct.rps else 0:.3f}, {phase.p50_ms - direct.p50_ms:+.2f} ms, {cpu}"
                    + errors
                )
            cells.append(f"{min(idles):.0%}-{max(idles):.0%}")
            rows.append("| " + " | ".join(cells) + " |")
    return "\n".join(rows)


def verdicts(phases: list[Phase]) -> list[tuple[str, str, bool]]:
    """Issue 27's targets per protocol, judged on this run (modelport's paths against the bare proxy and direct)."""
    out: list[tuple[str, str, bool]] = []

    def cpu_factor(workload: str, path: str, c: int, limit: float, what: str) -> None:
        phase, bare = _find(phases, workload, path, c), _find(phases, workload, "bare", c)
        if phase is None or bare is None or not phase.cpu_ms or not bare.cpu_ms:
            return
        factor = phase.cpu_ms / bare.cpu_ms
        value = f"{phase.cpu_ms:.2f} / {bare.cpu_ms:.2f} ms = {factor:.2f}x"
        out.append((f"{workload} {what} CPU <= {limit}x bare proxy (c={c})", value, factor <= limit))

    for protocol in PROTOCOLS:
        name = protocol.name
        cpu_factor(name, "fast", 64, MAX_CPU_FACTOR_FAST, "fast-path request")
        cpu_factor(name, "translated", 64, MAX_CPU_FACTOR_TRANSLATED, f"translated ({protocol.translated_label})")
        cpu_factor(f"{name}-stream", "fast", 64, MAX_CPU_FACTOR_STREAM, "16-chunk stream")
        fast, bare, direct = (_find(phases, name, p, 1) for p in ("fast", "bare", "direct"))
        if fast is not None and bare is not None and direct is not None:
            added, bare_added = fast.p50_ms - direct.p50_ms, bare.p50_ms - direct.p50_ms
            out.append(
                (
                    f"{name} added p50 at c=1 <= bare's + {MAX_ADDED_P50_OVER_BARE_MS} ms",
                    f"{added:+.2f} ms (bare {bare_added:+.2f} ms)",
                    added <= bare_added + MAX_ADDED_P50_OVER_BARE_MS,
                )
            )
        fast, direct = _find(phases, name, "fast", 64), _find(phases, name, "direct", 64)
        if fast is not None and direct is not None and direct.rps:
            ratio = fast.rps / direct.rps
            out.append((f"{name} req/s at c=64 >= {MIN_RATIO_C64} of direct", f"{ratio:.3f}", ratio >= MIN_RATIO_C64))
            factor = fast.p99_ms / direct.p99_ms
            out.append(
                (
                    f"{name} p99 at c=64 <= {MAX_P99_FACTOR_C64}x direct's",
                    f"{fast.p99_ms:.1f} ms = {factor:.2f}x {direct.p99_ms:.1f} ms",
                    factor <= MAX_P99_FACTOR_C64,
                )
            )
    return out


async def main_async(args: argparse.Namespace) -> int:
    data_dir = Path(tempfile.mkdtemp(prefix="modelport-matrix-"))
    upstream = _procs.start_fake_upstream(delay_ms=args.delay_ms, chunks=16)
    servers: dict[str, _procs.Proc] = {"direct": upstream}
    load_before = _procs.load_average()
    try:
        servers["bare"] = _procs.start_bare_proxy(upstream.url, workers=args.workers)
        gateway = _procs.start_gateway(data_dir, upstream.url, workers=args.workers, database_url=None)
        servers["fast"] = servers["translated"] = gateway
        if args.peer == "on" or (args.peer == "auto" and _procs.peer_available()):
            servers["peer"] = _procs.start_peer(data_dir, upstream.url, workers=args.workers)
        started = time.monotonic()
        phases = await run_matrix(args, servers)
        elapsed = time.monotonic() - started
    finally:
        for proc in servers.values():
            if proc is not upstream:
                proc.stop()
        upstream.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    load_after = _procs.load_average()
    table = matrix_table(phases, args.concurrency)
    checks = verdicts(phases)
    print()
    print(
        f"{args.seconds:g} s per phase after {args.warmup:g} s warm-up, --workers {args.workers}, fake upstream "
        f"{args.delay_ms:g} ms; {elapsed:.0f} s; load average {load_before} before, {load_after} after"
    )
    print("ratio = req/s against direct; +p50 = added p50 against direct; CPU = the server's per request")
    print(table)
    print()
    print("targets (issue 27):")
    for what, value, ok in checks:
        print(f"  [{'PASS' if ok else 'FAIL'}] {what}: {value}")
    args.out.write_text(
        json.dumps(
            {
                "command": " ".join(sys.argv),
                "load_average": {"before": load_before, "after": load_after},
                "phases": [asdict(p) for p in phases],
                "table": table,
                "targets": [{"target": w, "value": v, "pass": ok} for w, v, ok in checks],
            },
            indent=2,
        )
    )
    print(f"\nresults written to {args.out}")
    return 1 if any(p.errors for p in phases) else 0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=4.0, help="recorded seconds per phase")
    parser.add_argument("--warmup", type=float, default=1.0, help="unrecorded seconds before each phase")
    parser.add_argument("--short", action="store_true", help="a quick look: 1.5 s per phase after 0.5 s")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 16, 64])
    parser.add_argument("--only", nargs="*", choices=[workload_name(p, s) for p, s in WORKLOADS])
    parser.add_argument("--workers", type=int, default=2, help="processes per server (modelport serve --workers)")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="fake upstream answer time")
    parser.add_argument("--peer", choices=["auto", "on", "off"], default="auto", help="LiteLLM from .tools/litellm")
    parser.add_argument("--out", type=Path, default=Path("/tmp/modelport-matrix.json"))
    args = parser.parse_args()
    if args.short:
        args.seconds, args.warmup = 1.5, 0.5
    sys.exit(_procs.run_main(main_async(args)))


if __name__ == "__main__":
    main()
