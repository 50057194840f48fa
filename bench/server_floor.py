"""The floor of the ASGI server: `bare_proxy.py` served by uvicorn (what modelport runs on) and by granian.

    python3 -m venv .tools/granian && .tools/granian/bin/pip install granian uvicorn aiohttp uvloop
    .venv/bin/python bench/server_floor.py [--seconds 5] [--rounds 2]

Starts `fake_upstream.py` (50 ms answers, 16-chunk streams), the bare proxy under uvicorn (uvloop,
httptools; `_procs.start_bare_proxy`) and the same ASGI app under granian (`--interface asgi --loop
uvloop`, one worker, from its own virtualenv: never a project dependency), then loads each in turn,
`--rounds` times: non-streaming chat at concurrency 64 and streams at 16. Prints requests/s and the
server's CPU time per request (all its processes and threads, from /proc, over exactly the recorded
requests). Both use the same upstream client (one pooled aiohttp session), so the difference is the server's.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import _load
import _procs
import gateway_bench

GRANIAN = _procs.REPO / ".tools" / "granian" / "bin" / "granian"
_APP = """import os, sys
sys.path.insert(0, {bench!r})
from bare_proxy import BareProxy
app = BareProxy(os.environ["MODELPORT_BENCH_UPSTREAM"])
"""


async def _measure(pids: Callable[[], list[int]], url: str, *, stream: bool, concurrency: int, seconds: float) -> str:
    body: dict[str, object] = {"model": "m", "messages": gateway_bench.PROMPT, "max_tokens": 16}
    if stream:
        body["stream"] = True
    complete = gateway_bench._stream_complete if stream else gateway_bench._chat_complete
    target = _load.Target(
        url + "/v1/chat/completions", {"content-type": "application/json"}, json.dumps(body).encode(), stream, complete
    )
    marks: dict[bool, float] = {}

    def window(opening: bool) -> None:
        marks[opening] = _procs.cpu_seconds(pids())

    async with _load.new_session(concurrency) as session:
        sample = await _load.run(
            session, target, concurrency=concurrency, seconds=seconds, warmup=1.0, on_window=window
        )
    n = max(sample.count, 1)
    cpu_ms = (marks[False] - marks[True]) * 1000 / n
    rps = sample.count / sample.elapsed if sample.elapsed else 0.0
    return f"{rps:8.1f} req/s  CPU {cpu_ms:.3f} ms per request  errors {sample.errors}"


def _start_granian(upstream: str, app_dir: Path) -> tuple[subprocess.Popen[str], str]:
    port = _procs._free_port()
    (app_dir / "granian_bare.py").write_text(_APP.format(bench=str(_procs.BENCH_DIR)))
    env = {**os.environ, "MODELPORT_BENCH_UPSTREAM": upstream, "PYTHONPATH": str(app_dir)}
    process = subprocess.Popen(
        [
            str(GRANIAN),
            *("--interface", "asgi", "--loop", "uvloop", "--workers", "1", "--no-ws"),
            *("--host", "127.0.0.1", "--port", str(port), "--log-level", "warning"),
            "granian_bare:app",
        ],
        env=env,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    _procs.wait_first_chat(url, "m", None, process, 60)
    return process, url


async def main_async(args: argparse.Namespace) -> None:
    upstream = _procs.start_fake_upstream(delay_ms=50, chunks=16)
    uvicorn_proxy = _procs.start_bare_proxy(upstream.url, workers=1)
    granian: subprocess.Popen[str] | None = None
    servers: list[tuple[str, Callable[[], list[int]], str]] = [
        ("uvicorn", lambda: uvicorn_proxy.pids, uvicorn_proxy.url)
    ]
    with tempfile.TemporaryDirectory() as app_dir:
        try:
            if GRANIAN.exists():
                granian, granian_url = _start_granian(upstream.url, Path(app_dir))
                pid = granian.pid
                servers.append(("granian", lambda: _procs.descendants(pid), granian_url))
            else:
                print(f"granian not installed at {GRANIAN}: uvicorn only (see the docstring)", file=sys.stderr)
            for round_ in range(args.rounds):
                for name, pids, url in servers:
                    for stream, concurrency in ((False, 64), (True, 16)):
                        line = await _measure(pids, url, stream=stream, concurrency=concurrency, seconds=args.seconds)
                        scenario = "stream16" if stream else "c=64"
                        load = os.getloadavg()[0]
                        print(f"round {round_ + 1}  {name:<8} {scenario:<9} {line}  (load {load:.2f})", flush=True)
        finally:
            if granian is not None:
                granian.terminate()
                granian.wait(timeout=30)
            uvicorn_proxy.stop()
            upstream.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
