"""Response cache benchmark (issue 40): hits against the bare proxy of the same run, and what a miss costs.

    .venv/bin/python bench/cache_bench.py [--seconds 5] [--out /tmp/modelport-cache-bench.json]

Starts `bench/fake_upstream.py` (answers after `--delay-ms`), `bench/bare_proxy.py` and `modelport serve`
(SQLite: entries in the database, or `--redis URL`), then measures Chat Completions, non-streaming:

- the bare proxy at c=1 and c=64 (every request reaches the fake upstream: the floor of a proxied call);
- the demo team with its cache off, every request a new prompt: the gateway's CPU per request (the base);
- the same team with its cache on (`team`), every request a new prompt: every request a miss, looked up,
  sent upstream and stored; its CPU per request less the base is what the cache costs a miss;
- the same team, one prompt asked again and again: every request a hit, at c=1 (p50) and c=64 (requests/s).

Hits never reach the upstream, so they are faster than the bare proxy by about the upstream's delay: the
ratios say how much. Prints a table and writes JSON. Everything started is stopped at the end.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import _load
import _procs

PROMPT = "Say hello in one short sentence."


class _Prompts(_load.Target):
    """A target whose body asks a new question each time it is read (every request a cache miss)."""

    _counter = itertools.count()

    @property
    def body(self) -> bytes:
        n = next(self._counter)
        return json.dumps({"model": "bench/fast", "messages": [{"role": "user", "content": f"{PROMPT} #{n}"}]}).encode()

    @body.setter
    def body(self, value: bytes) -> None:
        pass


def _complete(payload: bytes) -> bool:
    return payload.startswith(b"{") and b'"choices"' in payload


def _target(server: _procs.Proc, model: str, *, unique: bool = False) -> _load.Target:
    headers = {"content-type": "application/json"}
    if server.extra.get("key"):
        headers["authorization"] = f"Bearer {server.extra['key']}"
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": PROMPT}]}).encode()
    kind = _Prompts if unique else _load.Target
    return kind(server.url + "/v1/chat/completions", headers, body, False, _complete)


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))] if ordered else float("nan")


async def _phase(target: _load.Target, concurrency: int, args: argparse.Namespace, pids: list[int]) -> dict[str, Any]:
    cpu: list[float] = []

    def window(opening: bool) -> None:
        cpu.append(_procs.cpu_seconds(pids))

    async with _load.new_session(concurrency) as session:
        sample = await _load.run(
            session, target, concurrency=concurrency, seconds=args.seconds, warmup=args.warmup, on_window=window
        )
    count = max(1, sample.count)
    return {
        "concurrency": concurrency,
        "requests": sample.count,
        "errors": sample.errors,
        "first_error": sample.first_error,
        "rps": round(sample.count / sample.elapsed, 1) if sample.elapsed else 0.0,
        "p50_ms": round(_pct(sample.latencies, 0.5) * 1000, 3),
        "p99_ms": round(_pct(sample.latencies, 0.99) * 1000, 3),
        "cpu_ms_per_request": round((cpu[1] - cpu[0]) * 1000 / count, 3) if pids else None,
    }


def _set_cache(env: dict[str, str], mode: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "modelport", "admin", "team", "set", "demo", "--cache", mode],
        env=env,
        cwd=_procs.REPO,
        check=True,
        capture_output=True,
        timeout=60,
    )
    time.sleep(1.5)  # the serving process sees the team's change once its key cache entry expires


async def run(args: argparse.Namespace) -> dict[str, Any]:
    upstream = _procs.start_fake_upstream(delay_ms=args.delay_ms, chunks=16)
    data_dir = Path(tempfile.mkdtemp(prefix="modelport-cache-bench-"))
    extra = {"MODELPORT_AUTH_CACHE_SECONDS": "1"}
    if args.redis:
        extra["MODELPORT_REDIS_URL"] = args.redis
        extra["MODELPORT_RATELIMIT_PREFIX"] = f"mp-cache-bench-{os.getpid()}"
    started: list[_procs.Proc] = [upstream]
    try:
        bare = _procs.start_bare_proxy(upstream.url, workers=1)
        started.append(bare)
        gateway = _procs.start_gateway(data_dir, upstream.url, workers=1, database_url=None, extra_env=extra)
        started.append(gateway)
        env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
        env.update(
            {
                "MODELPORT_DATA_DIR": str(data_dir),
                "MODELPORT_CATALOG": str(data_dir / "catalog.toml"),
                "MODELPORT_CONFIG": str(data_dir / "config.toml"),
                **extra,
            }
        )
        pids = gateway.pids
        out: dict[str, Any] = {"delay_ms": args.delay_ms}
        out["bare_c1"] = await _phase(_target(bare, "m"), 1, args, bare.pids)
        out["bare_c64"] = await _phase(_target(bare, "m"), 64, args, bare.pids)
        out["off_unique_c1"] = await _phase(_target(gateway, "bench/fast", unique=True), 1, args, pids)
        _set_cache(env, "team")
        out["miss_unique_c1"] = await _phase(_target(gateway, "bench/fast", unique=True), 1, args, pids)
        out["hit_c1"] = await _phase(_target(gateway, "bench/fast"), 1, args, pids)
        out["hit_c64"] = await _phase(_target(gateway, "bench/fast"), 64, args, pids)
        off_cpu, miss_cpu = out["off_unique_c1"]["cpu_ms_per_request"], out["miss_unique_c1"]["cpu_ms_per_request"]
        out["ratios"] = {
            "hit_p50_c1_over_bare": round(out["hit_c1"]["p50_ms"] / out["bare_c1"]["p50_ms"], 3),
            "hit_rps_c64_over_bare": round(out["hit_c64"]["rps"] / max(out["bare_c64"]["rps"], 1e-9), 3),
            "miss_cpu_over_off_cpu": round(miss_cpu / off_cpu, 3) if off_cpu else None,
            "miss_added_cpu_ms": round(miss_cpu - off_cpu, 3),
        }
        return out
    finally:
        for proc in reversed(started):
            proc.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0, help="recorded seconds per phase")
    parser.add_argument("--warmup", type=float, default=1.0, help="unrecorded seconds before each phase")
    parser.add_argument("--delay-ms", type=float, default=50.0, help="fake upstream answer time")
    parser.add_argument("--redis", default=None, help="a Redis URL: entries in Redis instead of the database")
    parser.add_argument("--out", type=Path, default=Path("/tmp/modelport-cache-bench.json"))
    args = parser.parse_args()
    result = asyncio.run(run(args))
    args.out.write_text(json.dumps(result, indent=2))
    for name, phase in result.items():
        if isinstance(phase, dict) and "rps" in phase:
            print(
                f"{name:16} c={phase['concurrency']:<3} {phase['rps']:>8} req/s  p50 {phase['p50_ms']:>8} ms"
                f"  cpu/req {phase['cpu_ms_per_request']} ms  errors {phase['errors']}"
            )
    print(json.dumps(result["ratios"], indent=2))


if __name__ == "__main__":
    main()
