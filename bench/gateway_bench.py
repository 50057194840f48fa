"""Text gateway benchmark: direct calls to a fast fake upstream against the same calls through modelport.

    .venv/bin/python bench/gateway_bench.py [--seconds 8] [--out /tmp/modelport-bench.json]

In one run it starts `bench/fake_upstream.py` (answers after 50 ms, streams 16 chunks over those 50 ms)
and `modelport serve` (fresh data dir under /tmp, SQLite, the demo team with a large balance on a tier
with no practical limits), then measures Chat Completions requests three ways:

- direct:     client → fake upstream;
- fast:       client → modelport (`bench/fast`, an `openai_chat` deployment: same protocol, body relayed);
- translated: client → modelport (`bench/translated`, an `anthropic` deployment: Chat in, Messages upstream);

non-streaming at concurrency 1, 16 and 64, and streaming at 16 (latency to the last byte; time to first
byte as well). For each: requests/s, p50/p99 latency, the ratios to direct, the gateway's CPU time per
request (from /proc, over exactly the recorded requests) and the client's. Then resident memory of each
process and the cost of the per-request balance hold (`bench/_hold.py`). Prints a table and writes JSON.
Everything listens on 127.0.0.1 and everything started is stopped at the end.

With `--profile DIR`, py-spy samples the gateway during each recorded gateway phase (collapsed stacks in
DIR; py-spy must be on PATH or given with `--py-spy`); sampling costs CPU, so such a run's figures are
slightly pessimistic.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _hold
import _load
import _procs

SCENARIOS: list[tuple[str, int, bool]] = [("c1", 1, False), ("c16", 16, False), ("c64", 64, False), ("s16", 16, True)]
PEER_SCENARIOS = ("c1", "c64", "s16")  # the rows of the peer table (bare proxy and Python peer)
# direct: the fake upstream itself; bare: bench/bare_proxy.py (the floor of our stack); fast, translated:
# modelport; peer: LiteLLM's proxy, when installed under .tools/litellm.
PATHS = ("direct", "bare", "fast", "translated", "peer")
MODEL_OF = {"direct": "m", "bare": "m", "peer": "m", "fast": "bench/fast", "translated": "bench/translated"}
PROMPT = [{"role": "user", "content": "Say hello in one short sentence."}]

# Targets of issue 16 (performance).
MAX_ADDED_P50_MS_C1 = 0.5
MIN_RATIO_C64 = 0.9
MAX_P99_FACTOR_C64 = 1.5  # p99 at c=64 against direct's
MIN_RATIO_S16 = 0.95  # fast and translated streams
MAX_CPU_MS = 0.5  # per non-streaming request at c=64
MAX_CPU_MS_STREAM = 1.0  # per 16-chunk stream
MAX_RSS_WORKER_MB = 120.0
MAX_RSS_PARENT_MB = 40.0
MAX_STARTUP_S = 1.5


def _chat_complete(payload: bytes) -> bool:
    return payload.startswith(b"{") and b'"choices"' in payload


def _stream_complete(payload: bytes) -> bool:
    return payload.rstrip().endswith(b"data: [DONE]")


def make_target(path: str, stream: bool, server: _procs.Proc) -> _load.Target:
    body: dict[str, Any] = {"model": MODEL_OF[path], "messages": PROMPT, "max_tokens": 16}
    if stream:
        body["stream"] = True
    headers = {"content-type": "application/json"}
    url = server.url + "/v1/chat/completions"
    if server.extra.get("key"):
        headers["authorization"] = f"Bearer {server.extra['key']}"
    complete = _stream_complete if stream else _chat_complete
    return _load.Target(url, headers, json.dumps(body).encode(), stream, complete)


def _pct(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


@dataclass
class PhaseResult:
    scenario: str
    path: str
    concurrency: int
    stream: bool
    requests: int
    errors: int
    first_error: str | None
    rps: float
    p50_ms: float
    p99_ms: float
    ttfb_p50_ms: float | None
    ttfb_p99_ms: float | None
    gateway_cpu_ms: float | None
    gateway_sys_share: float | None  # part of the gateway's CPU spent in the kernel (sockets, mostly)
    upstream_cpu_ms: float
    client_cpu_ms: float
    other_load_cores: float  # CPU used by everything else on the machine during the window, in cores

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 3) if isinstance(v, float) else v) for k, v in self.__dict__.items()}


class CpuWindow:
    """CPU seconds across the recorded window of one phase: the gateway (user, system), the fake upstream,
    and the whole machine (to tell how busy everything else, e.g. other people's jobs, kept the cores)."""

    def __init__(self, server: _procs.Proc | None, upstream: _procs.Proc, profiler: Callable[[bool], None]) -> None:
        self._upstream, self._profiler = upstream, profiler
        self._pids = server.pids if server is not None else []
        self.gateway_user = self.gateway_sys = self.upstream = self.machine = 0.0

    def _read(self) -> tuple[float, float, float, float]:
        user, system = _procs.cpu_times(self._pids)
        return user, system, self._upstream.cpu(), _procs.machine_busy_seconds()

    def __call__(self, opening: bool) -> None:
        if opening:
            self._profiler(True)
            self._start = self._read()
        else:
            end = self._read()
            self.gateway_user, self.gateway_sys, self.upstream, self.machine = (
                b - a for a, b in zip(self._start, end, strict=True)
            )
            self._profiler(False)

    @property
    def gateway(self) -> float:
        return self.gateway_user + self.gateway_sys


class Profiler:
    """py-spy attached to the gateway for one phase at a time (collapsed stacks), or nothing."""

    def __init__(self, py_spy: str | None, out_dir: Path | None, pid: int, extra: list[str]) -> None:
        self._py_spy, self._out_dir, self._pid, self._extra = py_spy, out_dir, pid, extra
        self._running: subprocess.Popen[bytes] | None = None
        self.files: dict[str, str] = {}

    def for_phase(self, name: str) -> Callable[[bool], None]:
        def toggle(start: bool) -> None:
            if self._py_spy is None or self._out_dir is None:
                return
            if start:
                out = self._out_dir / f"{name}.txt"
                self.files[name] = str(out)
                self._running = subprocess.Popen(
                    [
                        self._py_spy,
                        "record",
                        "--pid",
                        str(self._pid),
                        "--format",
                        "raw",
                        "--rate",
                        "200",
                        "--nonblocking",
                        "--subprocesses",
                        "--output",
                        str(out),
                        *self._extra,
                    ],
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
                time.sleep(0.3)  # let it attach before the window opens
            elif self._running is not None:
                self._running.send_signal(2)  # SIGINT: py-spy writes its output and exits
                self._running.wait(timeout=30)
                self._running = None

        return toggle


async def run_phases(
    args: argparse.Namespace, upstream: _procs.Proc, servers: dict[str, _procs.Proc], profiler: Profiler
) -> list[PhaseResult]:
    """Every scenario on every path that has a server; `servers` maps a path to the process it calls."""
    results: list[PhaseResult] = []
    for scenario, concurrency, stream in SCENARIOS:
        if args.only and scenario not in args.only:
            continue
        for path in PATHS:
            server = servers.get(path)
            if server is None or (path in ("bare", "peer") and scenario not in PEER_SCENARIOS):
                continue
            target = make_target(path, stream, server)
            name = f"{path}-{scenario}"
            measured = None if path == "direct" else server
            profile = profiler.for_phase(name) if path in ("fast", "translated") else (lambda _: None)
            window = CpuWindow(measured, upstream, profile)
            async with _load.new_session(concurrency) as session:
                sample = await _load.run(
                    session,
                    target,
                    concurrency=concurrency,
                    seconds=args.seconds,
                    warmup=args.warmup,
                    on_window=window,
                )
            n = max(sample.count, 1)
            result = PhaseResult(
                scenario=scenario,
                path=path,
                concurrency=concurrency,
                stream=stream,
                requests=sample.count,
                errors=sample.errors,
                first_error=sample.first_error,
                rps=sample.count / sample.elapsed if sample.elapsed else 0.0,
                p50_ms=_pct(sample.latencies, 0.5) * 1000,
                p99_ms=_pct(sample.latencies, 0.99) * 1000,
                ttfb_p50_ms=_pct(sample.first_bytes, 0.5) * 1000 if stream else None,
                ttfb_p99_ms=_pct(sample.first_bytes, 0.99) * 1000 if stream else None,
                gateway_cpu_ms=window.gateway * 1000 / n if path != "direct" else None,
                gateway_sys_share=window.gateway_sys / window.gateway if path != "direct" and window.gateway else None,
                upstream_cpu_ms=window.upstream * 1000 / n,
                client_cpu_ms=sample.client_cpu * 1000 / n,
                other_load_cores=max(0.0, window.machine - window.gateway - window.upstream - sample.client_cpu)
                / sample.elapsed,
            )
            results.append(result)
            print(
                f"  {name:<16} {result.rps:8.1f} req/s  p50 {result.p50_ms:7.2f} ms  errors {result.errors}", flush=True
            )
            if sample.first_error:
                print(f"    first error: {sample.first_error}", flush=True)
    return results


def ratios(results: list[PhaseResult]) -> dict[str, dict[str, float]]:
    direct = {r.scenario: r for r in results if r.path == "direct"}
    out: dict[str, dict[str, float]] = {}
    for r in results:
        if r.path == "direct" or r.scenario not in direct:
            continue
        d = direct[r.scenario]
        entry = {
            "rps_ratio": r.rps / d.rps if d.rps else 0.0,
            "p50_ratio": r.p50_ms / d.p50_ms,
            "added_p50_ms": r.p50_ms - d.p50_ms,
            "added_p99_ms": r.p99_ms - d.p99_ms,
        }
        if r.ttfb_p50_ms is not None and d.ttfb_p50_ms is not None:
            entry["added_ttfb_p50_ms"] = r.ttfb_p50_ms - d.ttfb_p50_ms
        out[f"{r.path}-{r.scenario}"] = {k: round(v, 3) for k, v in entry.items()}
    return out


def _get(results: list[PhaseResult], path: str, scenario: str) -> PhaseResult | None:
    return next((r for r in results if r.path == path and r.scenario == scenario), None)


@dataclass
class ServerFacts:
    """What the peer table says about a server besides its phases: memory and start-up."""

    rss_mb: float  # the whole process tree, right after start
    processes: int
    parent_rss_mb: float | None  # the supervisor, when it has workers
    worker_rss_mb: list[float]  # each serving process
    startup_s: float | None

    @classmethod
    def of(cls, proc: _procs.Proc) -> ServerFacts:
        memory = proc.memory()
        root = str(proc.process.pid)
        workers = [cur for pid, (cur, _) in memory.items() if pid != root]
        parent = memory[root][0] if root in memory else 0.0
        return cls(
            rss_mb=round(sum(cur for cur, _ in memory.values()), 1),
            processes=len(memory),
            parent_rss_mb=round(parent, 1) if workers else None,
            worker_rss_mb=[round(w, 1) for w in workers] or [round(parent, 1)],
            startup_s=round(proc.startup_seconds, 3) if proc.startup_seconds is not None else None,
        )


def verdicts(
    results: list[PhaseResult], rat: dict[str, dict[str, float]], facts: dict[str, ServerFacts]
) -> list[tuple[str, str, bool]]:
    """Issue 16's targets, judged on this run (modelport's fast path unless said)."""
    out: list[tuple[str, str, bool]] = []
    if "fast-c1" in rat:
        v = rat["fast-c1"]["added_p50_ms"]
        out.append((f"added p50 at c=1 <= {MAX_ADDED_P50_MS_C1} ms", f"{v:.2f} ms", v <= MAX_ADDED_P50_MS_C1))
    if "fast-c64" in rat:
        v = rat["fast-c64"]["rps_ratio"]
        out.append((f"req/s at c=64 >= {MIN_RATIO_C64} of direct", f"{v:.3f}", v >= MIN_RATIO_C64))
    fast, direct = _get(results, "fast", "c64"), _get(results, "direct", "c64")
    if fast is not None and direct is not None:
        factor = fast.p99_ms / direct.p99_ms
        out.append(
            (
                f"p99 at c=64 <= {MAX_P99_FACTOR_C64}x direct's",
                f"{fast.p99_ms:.1f} ms = {factor:.2f}x {direct.p99_ms:.1f} ms",
                factor <= MAX_P99_FACTOR_C64,
            )
        )
    for path in ("fast", "translated"):
        if f"{path}-s16" in rat:
            v = rat[f"{path}-s16"]["rps_ratio"]
            out.append((f"{path} streams at 16 >= {MIN_RATIO_S16} of direct", f"{v:.3f}", v >= MIN_RATIO_S16))
    if fast is not None and fast.gateway_cpu_ms is not None:
        v = fast.gateway_cpu_ms
        out.append((f"gateway CPU per request at c=64 <= {MAX_CPU_MS} ms", f"{v:.2f} ms", v <= MAX_CPU_MS))
    stream = _get(results, "fast", "s16")
    if stream is not None and stream.gateway_cpu_ms is not None:
        v = stream.gateway_cpu_ms
        out.append(
            (f"gateway CPU per 16-chunk stream <= {MAX_CPU_MS_STREAM} ms", f"{v:.2f} ms", v <= MAX_CPU_MS_STREAM)
        )
    mp = facts.get("modelport")
    if mp is not None:
        worst = max(mp.worker_rss_mb)
        out.append(
            (f"RSS per serving process <= {MAX_RSS_WORKER_MB:g} MiB", f"{worst:.1f} MiB", worst <= MAX_RSS_WORKER_MB)
        )
        if mp.parent_rss_mb is not None:
            v = mp.parent_rss_mb
            out.append((f"supervisor RSS <= {MAX_RSS_PARENT_MB:g} MiB", f"{v:.1f} MiB", v <= MAX_RSS_PARENT_MB))
        if mp.startup_s is not None:
            v = mp.startup_s
            out.append((f"start-up to the first 200 <= {MAX_STARTUP_S} s", f"{v:.2f} s", v <= MAX_STARTUP_S))
    return out


def peer_table(
    results: list[PhaseResult], rat: dict[str, dict[str, float]], facts: dict[str, ServerFacts]
) -> list[list[str]]:
    """The issue's side-by-side table: one row per figure, one column per server (markdown)."""
    columns = [("direct", "direct"), ("bare", "bare proxy"), ("fast", "modelport"), ("peer", "Python peer")]
    present = [(p, label) for p, label in columns if any(r.path == p for r in results)]

    def cell(path: str, scenario: str, what: str) -> str:
        r = _get(results, path, scenario)
        if r is None:
            return "-"
        x = rat.get(f"{path}-{scenario}", {})
        if what == "added_p50":
            return "-" if path == "direct" else f"{x['added_p50_ms']:+.2f} ms"
        if what == "ratio":
            return "1.0" if path == "direct" else f"{x['rps_ratio']:.3f}"
        if what == "p99":
            return f"{r.p99_ms:.1f} ms"
        if what == "cpu":
            return "-" if r.gateway_cpu_ms is None else f"{r.gateway_cpu_ms:.2f} ms"
        raise ValueError(what)

    def translated_stream(path: str) -> str:
        if path == "direct":
            return "1.0"
        if path == "fast":
            x = rat.get("translated-s16")
            return "-" if x is None else f"{x['rps_ratio']:.3f}"
        return "-"

    def fact(path: str, what: str) -> str:
        key = {"fast": "modelport", "bare": "bare", "peer": "peer"}.get(path)
        f = facts.get(key) if key else None
        if f is None:
            return "-"
        if what == "rss":
            detail = f"{f.processes} process" + ("es" if f.processes > 1 else "")
            if f.parent_rss_mb is not None:
                detail += f": parent {f.parent_rss_mb:.0f} + " + " + ".join(f"{w:.0f}" for w in f.worker_rss_mb)
            return f"{f.rss_mb:.0f} MiB ({detail})"
        return "-" if f.startup_s is None else f"{f.startup_s:.2f} s"

    rows: list[list[str]] = [["row", *(label for _, label in present)]]
    rows.append(["chat, concurrency 1: added p50", *(cell(p, "c1", "added_p50") for p, _ in present)])
    rows.append(["chat, concurrency 64: throughput ratio to direct", *(cell(p, "c64", "ratio") for p, _ in present)])
    rows.append(["chat, concurrency 64: p99", *(cell(p, "c64", "p99") for p, _ in present)])
    rows.append(["chat stream, concurrency 16: ratio", *(cell(p, "s16", "ratio") for p, _ in present)])
    rows.append(["chat -> Messages upstream stream, 16: ratio", *(translated_stream(p) for p, _ in present)])
    rows.append(["gateway CPU per request at concurrency 64", *(cell(p, "c64", "cpu") for p, _ in present)])
    rows.append(["gateway CPU per 16-chunk stream", *(cell(p, "s16", "cpu") for p, _ in present)])
    rows.append(["RSS after start (whole tree)", *(fact(p, "rss") for p, _ in present)])
    rows.append(["start-up to first 200", *(fact(p, "startup") for p, _ in present)])
    return rows


def markdown(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
    lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
    return "\n".join(lines)


def _f(value: float | None, spec: str = ".2f") -> str:
    return "-" if value is None else format(value, spec)


def print_report(
    results: list[PhaseResult],
    rat: dict[str, dict[str, float]],
    memory: dict[str, Any],
    hold: dict[str, Any] | None,
    facts: dict[str, ServerFacts],
) -> None:
    head = (
        f"{'scenario':<9}{'path':<11}{'req/s':>9}{'ratio':>7}{'p50 ms':>9}{'p99 ms':>9}{'+p50 ms':>9}"
        f"{'TTFB p50':>10}{'gw CPU':>9}{'sys%':>6}{'up CPU':>8}{'cli CPU':>9}{'others':>8}{'errors':>8}"
    )
    print()
    print("Chat Completions, 50 ms fake upstream; ratio = req/s vs direct; gw/up/cli CPU = ms of CPU per request in")
    print("the gateway (bare proxy, peer) / fake upstream / load generator; sys% = the gateway's share in the")
    print("kernel; others = cores busy with anything else during the phase (high values make the figures noisy)")
    print(head)
    print("-" * len(head))
    labels = {"c1": "c=1", "c16": "c=16", "c64": "c=64", "s16": "stream16"}
    for r in results:
        x = rat.get(f"{r.path}-{r.scenario}", {})
        print(
            f"{labels[r.scenario]:<9}{r.path:<11}{r.rps:>9.1f}{_f(x.get('rps_ratio', 1.0)):>7}{r.p50_ms:>9.2f}"
            f"{r.p99_ms:>9.2f}{_f(x.get('added_p50_ms')):>9}{_f(r.ttfb_p50_ms):>10}{_f(r.gateway_cpu_ms):>9}"
            f"{_f(r.gateway_sys_share and r.gateway_sys_share * 100, '.0f'):>6}"
            f"{r.upstream_cpu_ms:>8.2f}{r.client_cpu_ms:>9.2f}{r.other_load_cores:>8.2f}{r.errors:>8}"
        )
    print()
    print("resident memory (MB, current / peak):")
    for name, pids in memory.items():
        for pid, (cur, peak) in pids.items():
            print(f"  {name:<14} pid {pid:<8} {cur:8.1f} / {peak:.1f}")
    if hold:
        print()
        print(
            f"ledger hold ({hold['database']}; paid once per credit reservation, not per request): "
            f"{hold['hold_serial_p50_ms']} ms p50 alone ({hold['hold_serial_cpu_ms']} ms CPU); "
            f"{hold['hold_16_in_flight_p50_ms']} ms p50 with 16 in flight ({hold['hold_16_in_flight_per_s']}/s); "
            f"batched settlement {hold['settlement_batched_wall_ms']} ms each"
        )
    print()
    print("side by side (modelport = the fast path; the Messages row is modelport's translated path):")
    print(markdown(peer_table(results, rat, facts)))
    checks = verdicts(results, rat, facts)
    if checks:
        print()
        print("targets (issue 16):")
        for what, value, ok in checks:
            print(f"  [{'PASS' if ok else 'FAIL'}] {what}: {value}")


async def idle_cpu_ms_per_s(gateway: _procs.Proc, seconds: float = 3.0) -> float:
    await asyncio.sleep(1.0)  # let start-up work settle
    before = gateway.cpu()
    await asyncio.sleep(seconds)
    return round((gateway.cpu() - before) * 1000 / seconds, 2)


async def main_async(args: argparse.Namespace) -> int:
    data_dir = Path(tempfile.mkdtemp(prefix="modelport-bench-"))
    upstream = _procs.start_fake_upstream(delay_ms=args.delay_ms, chunks=args.chunks)
    servers: dict[str, _procs.Proc] = {"direct": upstream}
    facts: dict[str, ServerFacts] = {}
    try:
        # One server at a time while another starts, so start-up times are not measured against each other.
        if not args.no_bare:
            servers["bare"] = _procs.start_bare_proxy(upstream.url, workers=args.workers)
            facts["bare"] = ServerFacts.of(servers["bare"])
        gateway = _procs.start_gateway(
            data_dir,
            upstream.url,
            workers=args.workers,
            database_url=args.database_url,
            launcher=args.launcher,
            metrics=args.metrics,
            limited_key=args.limited_key,
        )
        servers["fast"] = servers["translated"] = gateway
        facts["modelport"] = ServerFacts.of(gateway)
        if args.peer == "on" or (args.peer == "auto" and _procs.peer_available()):
            servers["peer"] = _procs.start_peer(data_dir, upstream.url, workers=args.workers)
            facts["peer"] = ServerFacts.of(servers["peer"])
        print(
            f"fake upstream {upstream.url} (pid {upstream.process.pid}); "
            f"gateway {gateway.url} (pid {gateway.process.pid}, {args.workers} worker(s)); data {data_dir}; "
            + "; ".join(f"{p} {servers[p].url}" for p in ("bare", "peer") if p in servers),
            flush=True,
        )
        memory_idle = {"gateway": gateway.memory(), "fake upstream": upstream.memory()}
        idle_cpu = await idle_cpu_ms_per_s(gateway)
        py_spy = args.py_spy or shutil.which("py-spy")
        if args.profile and py_spy is None:
            raise SystemExit("--profile needs py-spy (pip install py-spy) on PATH or --py-spy")
        if args.profile:
            args.profile.mkdir(parents=True, exist_ok=True)
        profiler = Profiler(
            py_spy if args.profile else None, args.profile, gateway.process.pid, args.profile_args.split()
        )
        started = time.monotonic()
        results = await run_phases(args, upstream, servers, profiler)
        memory = {
            name: proc.memory()
            for name, proc in (("gateway", gateway), *((p, servers[p]) for p in ("bare", "peer") if p in servers))
        }
        memory["fake upstream"] = upstream.memory()
        memory["bench client"] = {"self": _procs.rss_mb(os.getpid())}
        for proc in servers.values():
            if proc is not upstream:
                proc.stop()
        try:
            hold = await _hold.measure(args.database_url or f"sqlite+aiosqlite:///{data_dir / 'modelport.db'}")
        except Exception as exc:  # e.g. a --launcher of another checkout left an older schema
            print(f"ledger hold not measured: {exc!r}"[:300])
            hold = None
        rat = ratios(results)
        print_report(results, rat, memory, hold, facts)
        print(f"gateway CPU when idle: {idle_cpu:.1f} ms per second (timers, batch writers)")
        report = {
            "command": " ".join(sys.argv),
            "settings": {
                "seconds": args.seconds,
                "warmup": args.warmup,
                "delay_ms": args.delay_ms,
                "chunks": args.chunks,
                "workers": args.workers,
                "database": args.database_url or "sqlite (data dir)",
            },
            "phases": [r.to_json() for r in results],
            "ratios": rat,
            "servers": {name: f.__dict__ for name, f in facts.items()},
            "peer_table": peer_table(results, rat, facts),
            "targets": [{"target": w, "value": v, "pass": ok} for w, v, ok in verdicts(results, rat, facts)],
            "gateway_idle_cpu_ms_per_s": idle_cpu,
            "memory_mb_idle": memory_idle,
            "memory_mb_after": memory,
            "hold": hold,
            "profiles": profiler.files,
            "phases_seconds": round(time.monotonic() - started, 1),
        }
        args.out.write_text(json.dumps(report, indent=2))
        print(f"\nresults written to {args.out}")
        return 1 if any(r.errors for r in results) else 0
    finally:
        for proc in servers.values():
            if proc is not upstream:
                proc.stop()
        upstream.stop()
        if not args.keep_data:
            shutil.rmtree(data_dir, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=8.0, help="recorded seconds per phase")
    parser.add_argument("--warmup", type=float, default=1.0, help="unrecorded seconds before each phase")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="fake upstream answer time")
    parser.add_argument("--chunks", type=int, default=16, help="fake upstream stream chunks")
    parser.add_argument("--workers", type=int, default=1, help="modelport serve --workers")
    parser.add_argument(
        "--database-url",
        default=None,
        help="MODELPORT_DATABASE_URL of an EMPTY database (default: SQLite in the data dir)",
    )
    parser.add_argument("--only", nargs="*", choices=[s for s, _, _ in SCENARIOS], help="run only these scenarios")
    parser.add_argument("--out", type=Path, default=Path("/tmp/modelport-bench.json"))
    parser.add_argument("--profile", type=Path, default=None, help="write py-spy profiles of gateway phases here")
    parser.add_argument("--py-spy", default=None, help="path to the py-spy binary")
    parser.add_argument("--profile-args", default="", help="extra py-spy record arguments, e.g. '--gil --native'")
    parser.add_argument(
        "--launcher",
        default=None,
        help="experiments: a Python script run instead of `-m modelport` (gets `serve ...` args)",
    )
    parser.add_argument("--metrics", action="store_true", help="serve with MODELPORT_METRICS_PORT set (recording on)")
    parser.add_argument("--no-bare", action="store_true", help="skip the bare-proxy phases")
    parser.add_argument(
        "--limited-key", action="store_true", help="call with a key that has every per-key limit set (issue 24)"
    )
    parser.add_argument(
        "--peer",
        choices=["auto", "on", "off"],
        default="auto",
        help="the Python peer (LiteLLM from .tools/litellm): auto = when installed",
    )
    parser.add_argument("--keep-data", action="store_true", help="keep the gateway's temp data dir")
    args = parser.parse_args()
    sys.exit(_procs.run_main(main_async(args)))


if __name__ == "__main__":
    main()
