"""Regression guard on the gateway's own cost that does not depend on a quiet machine: instructions counted.

    .venv/bin/python bench/instr_guard.py            # check against bench/instr_baseline.json (exit 1: regression)
    .venv/bin/python bench/instr_guard.py --record   # measure and write the baseline

Runs `bench/bare_proxy.py` and `modelport serve` (one process each) under `valgrind --tool=callgrind` with
instrumentation off while they start, and the fake upstream and the client outside it. For each batch it
sends a few unrecorded requests (lazy imports, caches, the interpreter's specialisation), then zeroes the
counters (`callgrind_control`), sends a fixed number of requests one after another and dumps the count: the
instructions the server executed for exactly those requests, in every thread, independent of the machine's
load and clock speed. The guard compares ratios, modelport's instructions per request over the bare proxy's
for the same kind of request, so a new interpreter or library release moves both sides and not the verdict;
it fails when a ratio rises more than `--tolerance` (10 %) above the recorded one.

Batches: each protocol's fast path (a deployment of its own protocol: Chat Completions on `bench/fast`,
Responses on `bench/responses`, Messages on `bench/translated`), non-streaming and streamed (16 chunks), each
against the bare proxy relaying the same request; and Chat in / Messages upstream (`bench/translated`,
against the bare proxy's plain chat figure). The fake upstream
answers at once (`--delay-ms 0`) so that the servers' time-driven work (timers, batch writers) stays small
beside the requests' own work. Needs valgrind (`scripts/install_valgrind.sh`); perf's instruction counter is
not available in most VMs and containers, callgrind works everywhere valgrind runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import _procs
import aiohttp
from matrix_bench import PROTOCOLS, Protocol

BASELINE = _procs.BENCH_DIR / "instr_baseline.json"
# Valgrind runs a Python process ~5x slower without instrumentation and ~50x with it.
TIMEOUT_SCALE = 20.0
QUIET_SECONDS = 1.0
QUIET_INSTRUCTIONS = 2_000_000
_THREAD_RE = re.compile(r"^\s*Th\s+\d+\s+([\d,]+)", re.MULTILINE)
_TOTALS_RE = re.compile(rb"^(?:totals|summary):\s+(\d+)", re.MULTILINE)


@dataclass(frozen=True)
class Batch:
    name: str
    protocol: Protocol  # the route, the body and what a whole answer looks like (matrix_bench.py's)
    model_gateway: str
    stream: bool
    bare_batch: str  # the bare proxy's batch it is compared with (the bare proxy's model is always `m`)


_CHAT, _RESPONSES, _MESSAGES = PROTOCOLS
BATCHES = (
    Batch("chat", _CHAT, "bench/fast", False, "chat"),
    Batch("chat-stream", _CHAT, "bench/fast", True, "chat-stream"),
    Batch("translated", _CHAT, "bench/translated", False, "chat"),
    Batch("responses", _RESPONSES, "bench/responses", False, "responses"),
    Batch("responses-stream", _RESPONSES, "bench/responses", True, "responses-stream"),
    Batch("messages", _MESSAGES, "bench/translated", False, "messages"),
    Batch("messages-stream", _MESSAGES, "bench/translated", True, "messages-stream"),
)


def all_sleeping(pid: int) -> bool:
    """Every thread of `pid` is asleep (state S): none running or runnable (R), none in disk wait (D)."""
    states = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            raw = (task / "stat").read_text()
        except OSError:
            continue
        states.append(raw[raw.rindex(")") + 2])
    return bool(states) and all(state == "S" for state in states)


class Counter:
    """callgrind_control around one process under callgrind: zero the counters, dump them, read the dump."""

    def __init__(self, proc: _procs.Proc, out_dir: Path, prefix: str) -> None:
        self._pid = str(proc.process.pid)  # valgrind runs the tool in the process it was started as
        self._out_dir, self._prefix = out_dir, prefix

    def _control(self, *args: str) -> None:
        subprocess.run(["callgrind_control", *args, self._pid], check=True, capture_output=True, timeout=120)

    def start(self) -> None:
        self._control("-i", "on")

    def zero(self) -> None:
        self._control("-z")

    def executed(self) -> int:
        """Instructions counted so far (all threads), without dumping."""
        out = subprocess.run(
            ["callgrind_control", "-e", self._pid], check=True, capture_output=True, text=True, timeout=120
        ).stdout
        return sum(int(n.replace(",", "")) for n in _THREAD_RE.findall(out))

    async def settle(self) -> None:
        """Wait until the server has finished the work the last requests left behind (batch writes, their
        commits in the database thread): under valgrind on a busy machine that can take seconds, and work
        left over would fall on the wrong side of a counter reset. Quiet = under QUIET_INSTRUCTIONS in
        QUIET_SECONDS (the idle timers' few)."""
        deadline = time.monotonic() + 300
        last = self.executed()
        while time.monotonic() < deadline:
            await asyncio.sleep(QUIET_SECONDS)
            now = self.executed()
            # Few instructions in a wall second mean nothing on a starved machine (valgrind may get 2 % of a
            # core): quiet also needs every thread asleep, not waiting for a core.
            if now - last < QUIET_INSTRUCTIONS and all_sleeping(int(self._pid)):
                return
            last = now
        raise RuntimeError(f"pid {self._pid} kept working for 300 s after its requests")

    def dump(self) -> int:
        before = set(self._out_dir.glob(f"{self._prefix}.*"))
        self._control("-d")
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            new = sorted(set(self._out_dir.glob(f"{self._prefix}.*")) - before)
            for path in new:
                match = _TOTALS_RE.search(path.read_bytes())
                if match:
                    return int(match.group(1))
            time.sleep(0.1)
        raise RuntimeError(f"no callgrind dump of pid {self._pid} in {self._out_dir}")


async def _send(
    session: aiohttp.ClientSession, url: str, headers: dict[str, str], body: bytes, complete: Callable[[bytes], bool]
) -> None:
    async with session.post(url, data=body, headers=headers) as response:
        payload = await response.read()
    if response.status != 200 or not complete(payload):
        raise RuntimeError(f"{url}: {response.status} {payload[:300]!r}")


async def measure_batch(
    proc: _procs.Proc, counter: Counter, batch: Batch, model: str, *, warmup: int, requests: int, concurrency: int
) -> float:
    """Instructions per request the server spent on `requests` identical requests (after `warmup` more)."""
    protocol = batch.protocol
    body = json.dumps(protocol.body(model, batch.stream)).encode()
    complete = protocol.complete(batch.stream)
    headers = protocol.headers(proc.extra.get("key"))
    url = proc.url + protocol.path
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=concurrency), timeout=timeout) as session:

        async def run(n: int) -> None:
            queue = iter(range(n))

            async def worker() -> None:
                for _ in queue:
                    await _send(session, url, headers, body, complete)

            await asyncio.gather(*(worker() for _ in range(concurrency)))

        await run(warmup)
        await counter.settle()
        counter.zero()
        await run(requests)
        await counter.settle()  # the last batch writes (a multiple of their row count) land
        return counter.dump() / requests


def _wrapper(out_dir: Path, prefix: str) -> list[str]:
    return [
        "valgrind",
        "--tool=callgrind",
        "--instr-atstart=no",
        "--dump-instr=no",
        "--compress-strings=no",
        f"--callgrind-out-file={out_dir / prefix}.%p",
        "--quiet",
    ]


async def run_once(args: argparse.Namespace, out_dir: Path) -> dict[str, float]:
    """Instructions per request of each batch on both servers: {"bare/chat": ..., "modelport/chat": ...}."""
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    upstream = _procs.start_fake_upstream(delay_ms=0, chunks=16)
    started: list[_procs.Proc] = []
    data_dir = Path(tempfile.mkdtemp(prefix="modelport-guard-"))
    counts: dict[str, float] = {}
    try:
        bare = _procs.start_bare_proxy(
            upstream.url, workers=1, wrapper=_wrapper(out_dir, "bare"), env=env, timeout_scale=TIMEOUT_SCALE
        )
        started.append(bare)
        gateway = _procs.start_gateway(
            data_dir,
            upstream.url,
            workers=1,
            database_url=None,
            # Time-driven work off the counted window: cached keys stay cached, reservations are not renewed,
            # swept or returned while idle, and the batch writers flush by count (`_guard_launcher.py`).
            extra_env=_procs.COUNTING_ENV,
            launcher=str(_procs.BENCH_DIR / "_guard_launcher.py"),
            wrapper=_wrapper(out_dir, "modelport"),
            serve_args=["--no-workers"],  # no media task worker polling the queue: time-driven, not per request
            timeout_scale=TIMEOUT_SCALE,
        )
        started.append(gateway)
        for name, proc in (("bare", bare), ("modelport", gateway)):
            counter = Counter(proc, out_dir, name)
            counter.start()  # instrumentation on: from now `executed` counts
            for batch in BATCHES:
                if name == "bare" and batch.bare_batch != batch.name:
                    continue
                model = "m" if name == "bare" else batch.model_gateway
                per_request = await measure_batch(
                    proc,
                    counter,
                    batch,
                    model,
                    warmup=args.warmup,
                    requests=args.requests,
                    concurrency=args.concurrency,
                )
                counts[f"{name}/{batch.name}"] = per_request
                print(f"  {name:<10} {batch.name:<17} {per_request / 1e6:8.3f} M instructions per request", flush=True)
    finally:
        for proc in started:
            proc.stop(timeout=120)
        upstream.stop()
        shutil.rmtree(data_dir, ignore_errors=True)
    return counts


def ratios(counts: dict[str, float]) -> dict[str, float]:
    return {
        batch.name: round(counts[f"modelport/{batch.name}"] / counts[f"bare/{batch.bare_batch}"], 4)
        for batch in BATCHES
    }


def _interrupt(_signum: int, _frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    # Multiples of the writers' batch (`_guard_launcher.ROWS`), so every counted batch holds whole writes.
    parser.add_argument("--requests", type=int, default=60, help="counted requests per batch")
    parser.add_argument("--warmup", type=int, default=20, help="uncounted requests before each batch")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight during a batch")
    parser.add_argument("--tolerance", type=float, default=0.10, help="allowed rise of a ratio over the baseline")
    parser.add_argument("--record", action="store_true", help=f"write the measured ratios to {BASELINE.name}")
    parser.add_argument("--baseline", type=Path, default=BASELINE)
    parser.add_argument(
        "--keep-dumps", type=Path, default=None, help="keep the callgrind dumps here (for callgrind_annotate)"
    )
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        raise SystemExit("instr_guard: valgrind is not installed (bash scripts/install_valgrind.sh)")
    signal.signal(signal.SIGTERM, _interrupt)  # stop the servers under valgrind on the way out
    out_dir = args.keep_dumps or Path(tempfile.mkdtemp(prefix="modelport-callgrind-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    began = time.monotonic()
    try:
        counts = asyncio.run(run_once(args, out_dir))
    finally:
        if args.keep_dumps is None:
            shutil.rmtree(out_dir, ignore_errors=True)
    measured = ratios(counts)
    print(f"modelport / bare proxy, instructions per request ({time.monotonic() - began:.0f} s): {measured}")
    if args.record:
        args.baseline.write_text(
            json.dumps(
                {
                    "ratios": measured,
                    "instructions_per_request": {k: round(v) for k, v in counts.items()},
                    "requests": args.requests,
                    "warmup": args.warmup,
                    "concurrency": args.concurrency,
                    "python": sys.version.split()[0],
                },
                indent=2,
            )
            + "\n"
        )
        print(f"recorded in {args.baseline}")
        return
    recorded: dict[str, float] = json.loads(args.baseline.read_text())["ratios"]
    failed = False
    for name, ratio in measured.items():
        limit = recorded[name] * (1 + args.tolerance)
        verdict = "ok" if ratio <= limit else "REGRESSION"
        failed |= ratio > limit
        print(f"  {name:<17} {ratio:6.3f} (recorded {recorded[name]:.3f}, limit {limit:.3f}) {verdict}")
        if ratio < recorded[name] * (1 - args.tolerance):
            print(f"    {name}: more than {args.tolerance:.0%} below the record: re-record it (--record)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
