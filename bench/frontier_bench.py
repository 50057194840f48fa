"""The public 12-gateway benchmark's figures (GetBusbar/benchmarking, onthebench.ai) for modelport, the bare proxy
and LiteLLM in one run, on Chat Completions, Responses and Messages (issue 42).

    .venv/bin/python bench/frontier_bench.py --quick                  # ~10 minutes: 1.5-2 s per phase
    .venv/bin/python bench/frontier_bench.py --markdown /tmp/frontier.md   # the full run, ~35 minutes (at most ~45)
    .venv/bin/python bench/frontier_bench.py --quick --protocols chat --peer off

Lanes, per protocol (`matrix_bench.PROTOCOLS`): **direct** to the fake upstream, **bare** (`bare_proxy.py`),
modelport's **fast** path and its **translated** lane (Chat -> Messages, Responses -> Chat, Messages -> Chat),
**peer**: LiteLLM's proxy (its own venv, see bench/README.md). Two stages, each with freshly started servers:

1. instant upstream (answers at once): a closed-loop concurrency sweep per lane; each rung's p99 minus the
   direct call's p99 at the same concurrency is its *added p99*. The rung at c=1 gives the added p99 at c=1;
   the **throughput frontier** at a bound B (1/5/10/50 ms) is the most requests/s of any rung that failed
   nothing and added at most B. A lane's sweep stops past the largest bound.
2. upstream answering after 20 ms, streams of 16 content frames 20 ms apart: first **memory** (RSS of each
   server's process tree, idle before any load, steady = the median of the last third of a fixed Chat load at
   c=64, the growth rate over it, recovered = at the end of a quiet window after it); then **sustained
   requests/s** (the most requests/s without a failed request over a concurrency sweep; stops once saturated);
   **time to first token** and the **frame gap** (between consecutive content frames) at c=1; and the
   **most concurrent streams sustained**: a stream is sustained when all its frames arrived with no gap over
   2x the upstream's 20 ms; a concurrency holds when no stream failed and >= 99 % were sustained (a
   doubling ladder, then bisection between the last holding and the first failing rung).

Every phase records the machine's idle share (/proc/stat: what the two cores had left). Prints a markdown table
with every figure and issue 42's targets (against the bare proxy and LiteLLM of the same run), PASS/FAIL;
`--markdown PATH` writes them too, `--out` the JSON. CPU per request is `matrix_bench.py`'s.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import _frontier
import _load
import _procs
import _streams
import matrix_bench
from matrix_bench import PROTOCOLS, Protocol

BOUNDS_MS = (1.0, 5.0, 10.0, 50.0)
# Issue 42's targets, against the bare proxy and LiteLLM of the same run.
MAX_ADDED_P99_OVER_BARE_MS = 0.3  # at c=1
MIN_STREAMS_OF_BARE = 0.9
MIN_FRONTIER_OF_PEER = 5.0  # at every bound
LANES = ("direct", "bare", "fast", "translated", "peer")
SERVERS = {"bare": "bare proxy", "fast": "modelport", "peer": "LiteLLM"}  # lane of each server's memory soak
LABELS = {
    "direct": "direct",
    "bare": "bare proxy",
    "fast": "modelport fast",
    "translated": "modelport translated",
    "peer": "LiteLLM",
}


@dataclass(frozen=True)
class Plan:
    """How long each phase runs and which concurrencies the sweeps try."""

    seconds: float
    warmup: float
    frontier_ladder: tuple[int, ...]
    rps_ladder: tuple[int, ...]
    stream_c1_seconds: float
    stream_seconds: float
    stream_ladder: tuple[int, ...]
    refine: int  # bisections of the stream ceiling
    idle_s: float
    soak_s: float
    recover_s: float
    soak_concurrency: int = 64


QUICK = Plan(1.5, 0.5, (1, 4, 16, 64), (16, 64, 256), 2.0, 2.0, (8, 32, 128, 512), 0, 1.0, 3.0, 2.0)
FULL = Plan(
    5.0, 1.0, (1, 2, 4, 8, 16, 32, 64, 128), (8, 16, 32, 64, 128, 256, 512),
    10.0, 5.0, (8, 16, 32, 64, 128, 256, 512, 1024), 2, 5.0, 30.0, 15.0,
)  # fmt: skip


@dataclass
class Measure:
    """One recorded phase."""

    stage: str  # frontier | rps20 | stream-c1 | streams
    protocol: str
    lane: str
    concurrency: int
    requests: int
    errors: int
    first_error: str | None
    rps: float
    p50_ms: float
    p99_ms: float
    idle_share: float
    ttft_p50_ms: float | None = None
    ttft_p99_ms: float | None = None
    gap_p50_ms: float | None = None
    gap_p99_ms: float | None = None
    sustained_share: float | None = None
    holds: bool | None = None  # streams: the concurrency held its streams

    @property
    def rung(self) -> _frontier.Rung:
        return _frontier.Rung(self.concurrency, self.rps, self.p99_ms, self.errors)


@dataclass
class Memory:
    server: str
    idle_mb: float
    steady_mb: float
    growth_mb_per_min: float
    recovered_mb: float
    idle_share: float  # during the load


@dataclass
class Run:
    plan: Plan
    pace_ms: float
    frames: int
    stall_factor: float
    min_share: float
    measures: list[Measure] = field(default_factory=list)
    memory: list[Memory] = field(default_factory=list)

    def of(self, stage: str, protocol: str, lane: str) -> list[Measure]:
        return [m for m in self.measures if (m.stage, m.protocol, m.lane) == (stage, protocol, lane)]


class MachineIdle:
    """The machine's idle share between two calls (all cores, from /proc/stat)."""

    def __init__(self) -> None:
        self._start = _procs.machine_idle_total()

    def share(self) -> float:
        idle, total = _procs.machine_idle_total()
        return (idle - self._start[0]) / max(total - self._start[1], 1e-9)


def _ms(seconds: list[float], q: float) -> float:
    return _frontier.percentile(seconds, q) * 1000


# ---------------------------------------------------------------- phases


async def request_phase(
    run: Run, stage: str, protocol: Protocol, lane: str, server: _procs.Proc, concurrency: int
) -> Measure:
    window = matrix_bench.IdleWindow(None if lane == "direct" else server)
    async with _load.new_session(concurrency) as session:
        sample = await _load.run(
            session,
            matrix_bench.target_for(protocol, False, lane, server),
            concurrency=concurrency,
            seconds=run.plan.seconds,
            warmup=run.plan.warmup,
            on_window=window,
        )
    measure = Measure(
        stage=stage,
        protocol=protocol.name,
        lane=lane,
        concurrency=concurrency,
        requests=sample.count,
        errors=sample.errors,
        first_error=sample.first_error,
        rps=sample.count / sample.elapsed if sample.elapsed else 0.0,
        p50_ms=_ms(sample.latencies, 0.5),
        p99_ms=_ms(sample.latencies, 0.99),
        idle_share=window.idle_share,
    )
    _print(measure)
    return measure


async def stream_phase(
    run: Run, stage: str, protocol: Protocol, lane: str, server: _procs.Proc, concurrency: int, seconds: float
) -> Measure:
    window = matrix_bench.IdleWindow(None if lane == "direct" else server)
    async with _load.new_session(concurrency) as session:
        sample = await _streams.run_streams(
            session,
            matrix_bench.target_for(protocol, True, lane, server),
            concurrency=concurrency,
            seconds=seconds,
            warmup=run.plan.warmup,
            on_window=window,
        )
    pace = run.pace_ms / 1000
    streams = sample.streams
    sustained = sum(_frontier.stream_sustained(s.frames, run.frames, pace, run.stall_factor) for s in streams)
    ttfts = [s.frames[0] for s in streams if s.frames]
    gaps = [g for s in streams for g in _frontier.frame_gaps(s.frames)]
    ends = [s.frames[-1] for s in streams if s.frames]
    measure = Measure(
        stage=stage,
        protocol=protocol.name,
        lane=lane,
        concurrency=concurrency,
        requests=len(streams),
        errors=sample.errors,
        first_error=sample.first_error,
        rps=len(streams) / sample.elapsed if sample.elapsed else 0.0,
        p50_ms=_ms(ends, 0.5),  # to the last frame
        p99_ms=_ms(ends, 0.99),
        idle_share=window.idle_share,
        ttft_p50_ms=_ms(ttfts, 0.5),
        ttft_p99_ms=_ms(ttfts, 0.99),
        gap_p50_ms=_ms(gaps, 0.5),
        gap_p99_ms=_ms(gaps, 0.99),
        sustained_share=sustained / len(streams) if streams else 0.0,
        holds=_frontier.stream_rung_passes(sustained, len(streams), sample.errors, run.min_share),
    )
    _print(measure)
    return measure


def _print(m: Measure) -> None:
    line = (
        f"  {m.stage:<9} {m.protocol:<9} {m.lane:<10} c={m.concurrency:<4} {m.rps:8.1f}/s"
        f"  p50 {m.p50_ms:7.2f}  p99 {m.p99_ms:7.2f} ms  idle {m.idle_share:4.0%}  errors {m.errors}"
    )
    if m.gap_p99_ms is not None:
        line += f"  ttft {m.ttft_p50_ms:6.2f}  gap p99 {m.gap_p99_ms:6.2f} ms  sustained {m.sustained_share:.1%}"
    print(line, flush=True)
    if m.first_error:
        print(f"    first error: {m.first_error[:200]}", flush=True)


async def frontier_sweeps(run: Run, protocol: Protocol, servers: dict[str, _procs.Proc]) -> None:
    """Each rung: direct, then every lane still inside the largest bound (back to back, so they share the
    machine's state)."""
    active = [lane for lane in LANES if lane != "direct" and lane in servers]
    direct: list[_frontier.Rung] = []
    for c in run.plan.frontier_ladder:
        if not active:
            return
        m = await request_phase(run, "frontier", protocol, "direct", servers["direct"], c)
        run.measures.append(m)
        direct.append(m.rung)
        for lane in list(active):
            m = await request_phase(run, "frontier", protocol, lane, servers[lane], c)
            run.measures.append(m)
            if _frontier.frontier_sweep_done(m.rung, direct, max(BOUNDS_MS)):
                active.remove(lane)


async def rps_sweeps(run: Run, protocol: Protocol, servers: dict[str, _procs.Proc]) -> None:
    for lane in LANES:
        if lane not in servers:
            continue
        rungs: list[_frontier.Rung] = []
        for c in run.plan.rps_ladder:
            m = await request_phase(run, "rps20", protocol, lane, servers[lane], c)
            run.measures.append(m)
            rungs.append(m.rung)
            if _frontier.saturated_sweep_done(rungs):
                break


async def stream_sweeps(run: Run, protocol: Protocol, servers: dict[str, _procs.Proc]) -> None:
    for lane in LANES:
        if lane not in servers:
            continue
        m = await stream_phase(run, "stream-c1", protocol, lane, servers[lane], 1, run.plan.stream_c1_seconds)
        run.measures.append(m)
    for lane in LANES:
        if lane not in servers:
            continue
        results: dict[int, bool] = {}
        while (c := _frontier.next_stream_rung(results, run.plan.stream_ladder, run.plan.refine)) is not None:
            m = await stream_phase(run, "streams", protocol, lane, servers[lane], c, run.plan.stream_seconds)
            run.measures.append(m)
            results[c] = bool(m.holds)


async def _sample_rss(proc: _procs.Proc, into: list[tuple[float, float]], done: asyncio.Event) -> None:
    while not done.is_set():
        into.append((time.monotonic(), proc.rss_total_mb()[0]))
        await asyncio.sleep(0.2)


async def memory_soak(run: Run, servers: dict[str, _procs.Proc]) -> None:
    """Idle RSS of every server (fresh, all idle together), then per server a fixed Chat load (steady RSS and its
    growth) and a quiet window (recovered RSS)."""
    soaked = [(lane, name) for lane, name in SERVERS.items() if lane in servers]
    samples: dict[str, list[float]] = {name: [] for _, name in soaked}
    deadline = time.monotonic() + run.plan.idle_s
    while time.monotonic() < deadline:
        for lane, name in soaked:
            samples[name].append(servers[lane].rss_total_mb()[0])
        await asyncio.sleep(0.2)
    chat = PROTOCOLS[0]
    for lane, name in soaked:
        server = servers[lane]
        during: list[tuple[float, float]] = []
        loaded = asyncio.Event()
        idle = MachineIdle()
        sampler = asyncio.create_task(_sample_rss(server, during, loaded))
        async with _load.new_session(run.plan.soak_concurrency) as session:
            await _load.run(
                session,
                matrix_bench.target_for(chat, False, lane, server),
                concurrency=run.plan.soak_concurrency,
                seconds=run.plan.soak_s,
                warmup=0,
            )
        loaded.set()
        await sampler
        share = idle.share()
        await asyncio.sleep(run.plan.recover_s)
        tail = during[len(during) * 2 // 3 :] or during
        minutes = (tail[-1][0] - tail[0][0]) / 60 if len(tail) > 1 else 0.0
        memory = Memory(
            server=name,
            idle_mb=statistics.median(samples[name]),
            steady_mb=statistics.median(mb for _, mb in tail),
            growth_mb_per_min=(tail[-1][1] - tail[0][1]) / minutes if minutes else 0.0,
            recovered_mb=server.rss_total_mb()[0],
            idle_share=share,
        )
        run.memory.append(memory)
        print(
            f"  memory    {name:<12} idle {memory.idle_mb:6.1f}  steady {memory.steady_mb:6.1f}"
            f" ({memory.growth_mb_per_min:+.1f}/min)  recovered {memory.recovered_mb:6.1f} MiB"
            f"  idle {share:4.0%}",
            flush=True,
        )


# ---------------------------------------------------------------- servers


@dataclass
class Stage:
    upstream: _procs.Proc
    servers: dict[str, _procs.Proc]
    data_dir: Path

    def stop(self) -> None:
        for proc in {id(p): p for lane, p in self.servers.items() if lane != "direct"}.values():
            proc.stop()
        self.upstream.stop()
        shutil.rmtree(self.data_dir, ignore_errors=True)


def start_stage(args: argparse.Namespace, *, delay_ms: float, frame_ms: float | None) -> Stage:
    upstream = _procs.start_fake_upstream(delay_ms=delay_ms, chunks=args.frames, frame_ms=frame_ms)
    stage = Stage(upstream, {"direct": upstream}, Path(tempfile.mkdtemp(prefix="modelport-frontier-")))
    try:
        stage.servers["bare"] = _procs.start_bare_proxy(upstream.url, workers=args.workers)
        gateway = _procs.start_gateway(stage.data_dir, upstream.url, workers=args.workers, database_url=None)
        stage.servers["fast"] = stage.servers["translated"] = gateway
        if args.peer_on:
            stage.servers["peer"] = _procs.start_peer(
                stage.data_dir, upstream.url, workers=args.workers, peer_dir=args.peer_dir
            )
    except BaseException:
        stage.stop()
        raise
    gc.freeze()  # the load generator's heap so far is never garbage: no full collections of it mid-phase
    return stage


def default_peer_dir() -> Path:
    """This checkout's `.tools/litellm`, else the main checkout's (a git worktree shares its venvs)."""
    if _procs.peer_available():
        return _procs.PEER_DIR
    common = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-common-dir"],
        cwd=_procs.REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if common.returncode == 0 and common.stdout.strip():
        return Path(common.stdout.strip()).parent / ".tools" / "litellm"
    return _procs.PEER_DIR


# ---------------------------------------------------------------- report


def _rate(rps: float) -> str:
    return f"{rps:,.0f}/s"


def _span(measures: list[Measure]) -> str:
    shares = [m.idle_share for m in measures]
    return f"{min(shares):.0%}-{max(shares):.0%}" if shares else "-"


def figure_rows(run: Run, protocol: Protocol, lanes: list[str]) -> Iterator[tuple[str, dict[str, str], str]]:
    """(row label, cell per lane, idle share of the row's phases) for one protocol."""
    name = protocol.name
    direct = [m.rung for m in run.of("frontier", name, "direct")]
    c1 = {lane: next((m for m in run.of("frontier", name, lane) if m.concurrency == 1), None) for lane in lanes}
    cells: dict[str, str] = {}
    for lane, m in c1.items():
        added = _frontier.added_p99(m.rung, direct) if m is not None else None
        if m is None:
            cells[lane] = "-"
        elif lane == "direct":
            cells[lane] = f"p99 {m.p99_ms:.2f} ms"
        else:
            cells[lane] = f"{added:+.2f} ms" if added is not None else "-"
    yield f"{name}: added p99 at c=1", cells, _span([m for m in c1.values() if m is not None])
    for i, bound in enumerate(BOUNDS_MS):
        cells = {}
        measures: list[Measure] = []
        for lane in lanes:
            rungs = run.of("frontier", name, lane)
            measures += rungs
            if lane == "direct":
                best = max(rungs, key=lambda m: m.rps, default=None)
                cells[lane] = f"max {_rate(best.rps)} (c={best.concurrency})" if best else "-"
                continue
            point = _frontier.frontier([m.rung for m in rungs], direct, BOUNDS_MS)[i]
            cells[lane] = (
                f"{'>=' if point.floor else ''}{_rate(point.rps)} (c={point.concurrency})" if point.rps else "0"
            )
        yield f"{name}: frontier, added p99 <= {bound:g} ms", cells, _span(measures)
    cells, measures = {}, []
    for lane in lanes:
        rungs = run.of("rps20", name, lane)
        measures += rungs
        best = max((m for m in rungs if not m.errors), key=lambda m: m.rps, default=None)
        cells[lane] = f"{_rate(best.rps)} (c={best.concurrency})" if best else "-"
    yield f"{name}: sustained req/s, {run.pace_ms:g} ms upstream", cells, _span(measures)
    s1 = {lane: next(iter(run.of("stream-c1", name, lane)), None) for lane in lanes}
    d = s1.get("direct")
    for what, attr in (("time to first token p50", "ttft_p50_ms"), ("frame gap p50 / p99", "gap_p50_ms")):
        cells = {}
        for lane, m in s1.items():
            if m is None or d is None:
                cells[lane] = "-"
                continue
            first, base = getattr(m, attr), getattr(d, attr)
            if attr == "gap_p50_ms":
                assert m.gap_p99_ms is not None and d.gap_p99_ms is not None
                cells[lane] = (
                    f"{first:.2f} / {m.gap_p99_ms:.2f} ms"
                    if lane == "direct"
                    else f"{first - base:+.2f} / {m.gap_p99_ms - d.gap_p99_ms:+.2f} ms"
                )
            else:
                cells[lane] = f"{first:.2f} ms" if lane == "direct" else f"{first - base:+.2f} ms"
        yield f"{name}-stream: {what} (c=1)", cells, _span([m for m in s1.values() if m is not None])
    cells, measures = {}, []
    for lane in lanes:
        rungs = run.of("streams", name, lane)
        measures += rungs
        ceiling = _frontier.stream_ceiling({m.concurrency: bool(m.holds) for m in rungs})
        cells[lane] = f"{'>=' if ceiling.floor else ''}{ceiling.streams}" if rungs else "-"
    yield f"{name}-stream: most concurrent streams sustained", cells, _span(measures)


def figures_table(run: Run, protocols: list[Protocol]) -> str:
    lanes = [lane for lane in LANES if any(m.lane == lane for m in run.measures)]
    head = ["figure", *(LABELS[lane] for lane in lanes), "idle share"]
    rows = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for protocol in protocols:
        for label, cells, idle in figure_rows(run, protocol, lanes):
            rows.append("| " + " | ".join([label, *(cells.get(lane, "-") for lane in lanes), idle]) + " |")
    return "\n".join(rows)


def memory_table(run: Run) -> str:
    rows = [
        "| server | RSS idle | RSS steady (growth) | RSS recovered | idle share under load |",
        "|---|---|---|---|---|",
    ]
    for m in run.memory:
        rows.append(
            f"| {m.server} | {m.idle_mb:.0f} MiB | {m.steady_mb:.0f} MiB ({m.growth_mb_per_min:+.1f} MiB/min)"
            f" | {m.recovered_mb:.0f} MiB | {m.idle_share:.0%} |"
        )
    return "\n".join(rows)


def verdicts(run: Run, protocols: list[Protocol]) -> list[tuple[str, str, bool]]:
    """Issue 42's targets for modelport's fast and translated lanes of each protocol."""
    out: list[tuple[str, str, bool]] = []
    for protocol in protocols:
        name = protocol.name
        direct = [m.rung for m in run.of("frontier", name, "direct")]

        def added_c1(lane: str, name: str = name, direct: list[_frontier.Rung] = direct) -> float | None:
            m = next((m for m in run.of("frontier", name, lane) if m.concurrency == 1), None)
            return _frontier.added_p99(m.rung, direct) if m is not None else None

        def ceiling(lane: str, name: str = name) -> _frontier.StreamCeiling | None:
            rungs = run.of("streams", name, lane)
            return _frontier.stream_ceiling({m.concurrency: bool(m.holds) for m in rungs}) if rungs else None

        def points(lane: str, name: str = name, direct: list[_frontier.Rung] = direct) -> list[_frontier.FrontierPoint]:
            return _frontier.frontier([m.rung for m in run.of("frontier", name, lane)], direct, BOUNDS_MS)

        bare_added, bare_ceiling = added_c1("bare"), ceiling("bare")
        peer = points("peer") if run.of("frontier", name, "peer") else None
        for lane in ("fast", "translated"):
            what = f"{name} {'fast path' if lane == 'fast' else protocol.translated_label}"
            added = added_c1(lane)
            if added is not None and bare_added is not None:
                out.append(
                    (
                        f"{what}: added p99 at c=1 <= bare's + {MAX_ADDED_P99_OVER_BARE_MS} ms",
                        f"{added:+.2f} ms (bare {bare_added:+.2f} ms)",
                        added <= bare_added + MAX_ADDED_P99_OVER_BARE_MS,
                    )
                )
            held = ceiling(lane)
            if held is not None and bare_ceiling is not None:
                out.append(
                    (
                        f"{what} streams: most sustained >= {MIN_STREAMS_OF_BARE}x bare's",
                        f"{held.streams} (bare {bare_ceiling.streams})",
                        held.streams > 0 and held.streams >= MIN_STREAMS_OF_BARE * bare_ceiling.streams,
                    )
                )
            if peer is not None and run.of("frontier", name, lane):
                mine = points(lane)
                values = ", ".join(
                    f"{m.bound_ms:g} ms {m.rps:,.0f}/{p.rps:,.0f}" for m, p in zip(mine, peer, strict=True)
                )
                # LiteLLM at 0 (no rung within the bound): any sustained rate is more than 5x; both at 0 is no win.
                ok = all(m.rps > 0 and m.rps >= MIN_FRONTIER_OF_PEER * p.rps for m, p in zip(mine, peer, strict=True))
                out.append((f"{what}: frontier >= {MIN_FRONTIER_OF_PEER:g}x LiteLLM's at every bound", values, ok))
    return out


def report(run: Run, protocols: list[Protocol], heading: str) -> str:
    checks = verdicts(run, protocols)
    lines = [
        heading,
        "",
        "Added = against the direct call in the same phase shape; frontier = most req/s of a rung (c = its"
        " concurrency) that failed nothing with its added p99 within the bound (>=: the sweep's last rung);"
        " idle share = of the machine's cores, min-max over the row's phases. Translated lanes: "
        + ", ".join(p.translated_label for p in protocols)
        + ".",
        "",
        figures_table(run, protocols),
        "",
        memory_table(run),
        "",
        "Targets (issue 42):",
        "",
        *(f"- **{'PASS' if ok else 'FAIL'}** {what}: {value}" for what, value, ok in checks),
    ]
    return "\n".join(lines)


# ---------------------------------------------------------------- main


async def main_async(args: argparse.Namespace) -> int:
    plan = QUICK if args.quick else FULL
    if args.seconds is not None:
        plan = Plan(**{**asdict(plan), "seconds": args.seconds})
    run = Run(plan, args.pace_ms, args.frames, args.stall_factor, args.min_sustained_share)
    protocols = [p for p in PROTOCOLS if p.name in args.protocols]
    load_before, started = _procs.load_average(), time.monotonic()
    print("stage 1: instant upstream (added p99 at c=1, throughput frontier)", flush=True)
    stage = start_stage(args, delay_ms=0, frame_ms=None)
    try:
        for protocol in protocols:
            await frontier_sweeps(run, protocol, stage.servers)
    finally:
        stage.stop()
    print(
        f"stage 2: {args.pace_ms:g} ms upstream, frames {args.pace_ms:g} ms apart (memory, req/s, streams)", flush=True
    )
    stage = start_stage(args, delay_ms=args.pace_ms, frame_ms=args.pace_ms)
    try:
        await memory_soak(run, stage.servers)
        for protocol in protocols:
            await rps_sweeps(run, protocol, stage.servers)
            await stream_sweeps(run, protocol, stage.servers)
    finally:
        stage.stop()
    elapsed = time.monotonic() - started
    heading = (
        f"`{' '.join(['frontier_bench.py', *sys.argv[1:]])}`: {'quick' if args.quick else 'full'} mode,"
        f" {plan.seconds:g} s per phase after {plan.warmup:g} s, --workers {args.workers}, {args.frames} frames"
        f" {args.pace_ms:g} ms apart, stall > {args.stall_factor:g}x, {args.min_sustained_share:.0%} of streams;"
        f" {elapsed:.0f} s; load average {load_before} before, {_procs.load_average()} after"
    )
    text = report(run, protocols, heading)
    print()
    print(text)
    if args.markdown:
        args.markdown.write_text(text + "\n")
        print(f"\nmarkdown written to {args.markdown}")
    args.out.write_text(
        json.dumps(
            {
                "command": " ".join(sys.argv),
                "plan": asdict(plan),
                "elapsed_s": elapsed,
                "measures": [asdict(m) for m in run.measures],
                "memory": [asdict(m) for m in run.memory],
                "targets": [{"target": w, "value": v, "pass": ok} for w, v, ok in verdicts(run, protocols)],
            },
            indent=2,
        )
    )
    print(f"results written to {args.out}")
    broken = [m for m in run.measures if m.concurrency == 1 and m.errors]
    return 1 if broken else 0  # a lane that fails at c=1 is broken, not loaded


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="a few seconds per phase, coarse ladders")
    parser.add_argument("--seconds", type=float, help="recorded seconds per request phase (overrides the mode's)")
    parser.add_argument(
        "--protocols", nargs="+", choices=[p.name for p in PROTOCOLS], default=[p.name for p in PROTOCOLS]
    )
    parser.add_argument("--workers", type=int, default=2, help="processes per server (modelport serve --workers)")
    parser.add_argument("--pace-ms", type=float, default=20.0, help="stage 2's upstream delay and frame interval")
    parser.add_argument("--frames", type=int, default=16, help="content frames per stream")
    parser.add_argument("--stall-factor", type=float, default=2.0, help="a gap over this x the pace is a stall")
    parser.add_argument("--min-sustained-share", type=float, default=0.99, help="of a rung's streams; 1 = every one")
    parser.add_argument("--peer", choices=["auto", "on", "off"], default="auto", help="LiteLLM from --peer-dir")
    parser.add_argument("--peer-dir", type=Path, default=None, help="LiteLLM's venv (default: .tools/litellm)")
    parser.add_argument("--markdown", type=Path, help="also write the tables and targets here")
    parser.add_argument("--out", type=Path, default=Path("/tmp/modelport-frontier.json"))
    args = parser.parse_args()
    args.peer_dir = args.peer_dir or default_peer_dir()
    args.peer_on = args.peer == "on" or (args.peer == "auto" and _procs.peer_available(args.peer_dir))
    sys.exit(_procs.run_main(main_async(args)))


if __name__ == "__main__":
    main()
