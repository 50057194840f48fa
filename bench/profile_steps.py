"""Where a gateway's CPU goes, by step of the request: py-spy's collapsed stacks reduced to one table.

    .venv/bin/python bench/gateway_bench.py --only c64 s16 --profile /tmp/prof --py-spy PATH/py-spy
    .venv/bin/python bench/profile_steps.py /tmp/prof/fast-c64.txt /tmp/prof/fast-s16.txt

Each sample is charged to one step: the innermost frame of modelport's own code whose module (or module
and function) has a step in `STEPS` decides; a sample with no such frame (the server's HTTP parsing, the
event loop, aiohttp reading the upstream from a loop callback) goes to the library at its root. So the
steps are inclusive of the libraries they call: "parse" holds orjson, "upstream call" aiohttp's request
writing, "response" uvicorn's `send`.
"""

from __future__ import annotations

import argparse
import re
from collections import Counter
from pathlib import Path

# (module path fragment, function name or "" for any) → step; the first match of a frame wins.
STEPS: list[tuple[str, str, str]] = [
    ("modelport/web/body.py", "", "parse: read the body"),
    ("modelport/core/json_depth.py", "", "parse: JSON"),
    ("modelport/gateway/pipeline.py", "read_json_body_raw", "parse: JSON"),
    ("modelport/protocols/", "decode_request", "parse: decode to canonical"),
    ("modelport/core/validate.py", "", "parse: decode to canonical"),
    ("modelport/web/deps.py", "", "auth: key check"),
    ("modelport/accounts/", "", "auth: key check"),
    ("modelport/gateway/headers.py", "", "parse: headers"),
    ("modelport/gateway/pipeline.py", "_context", "parse: headers"),
    ("modelport/billing/settlement.py", "", "storage: batch writes (log rows, settlements)"),
    ("modelport/requestlog/store.py", "", "storage: batch writes (log rows, settlements)"),
    ("modelport/requestlog/writer.py", "write", "storage: batch writes (log rows, settlements)"),
    ("modelport/storage/", "", "storage: batch writes (log rows, settlements)"),
    ("modelport/billing/reservations.py", "asked_back", "credit: ask-back poll (10 Hz, database)"),
    ("modelport/billing/credit.py", "_run", "credit: ask-back poll (10 Hz, database)"),
    ("modelport/ratelimit/", "", "limits: rate/concurrency"),
    ("modelport/web/key_rate.py", "", "limits: rate/concurrency"),
    ("modelport/billing/", "", "limits: credit hold"),
    ("modelport/gateway/output_hold.py", "", "limits: credit hold"),
    ("modelport/gateway/metering.py", "admit", "limits: rate/concurrency"),
    ("modelport/gateway/model_name.py", "", "routing"),
    ("modelport/gateway/routing.py", "", "routing"),
    ("modelport/gateway/models_route.py", "", "routing"),
    ("modelport/gateway/pipeline.py", "resolve_model", "routing"),
    ("modelport/catalog/", "", "routing"),
    ("modelport/upstreams/", "", "upstream call"),
    ("modelport/gateway/upstream_call.py", "", "upstream call"),
    ("modelport/gateway/own_media.py", "", "upstream call"),
    ("modelport/gateway/pipeline.py", "_call", "upstream call"),
    ("modelport/gateway/pipeline.py", "_until_disconnect", "upstream call"),
    ("modelport/gateway/pipeline.py", "_wait_disconnect", "upstream call"),
    ("modelport/gateway/relay.py", "", "relay"),
    ("modelport/core/sse.py", "", "relay"),
    ("modelport/core/accumulate.py", "", "relay"),
    ("modelport/protocols/", "", "relay: codec (usage, translation)"),
    ("modelport/core/", "", "relay: codec (usage, translation)"),
    ("modelport/gateway/call_metrics.py", "", "metering"),
    ("modelport/metrics.py", "", "metering"),
    ("modelport/gateway/metering.py", "", "metering"),
    ("modelport/gateway/logsink.py", "", "logging: request log"),
    ("modelport/requestlog/", "", "logging: request log"),
    ("modelport/web/request_id.py", "log_access", "logging: access log"),
    ("modelport/web/request_id.py", "", "response"),
    ("modelport/gateway/answer.py", "", "response"),
    ("modelport/gateway/dispatch.py", "", "entry (dispatch)"),
    ("modelport/apps/factory.py", "", "entry (dispatch)"),
]
# Leaves where a thread waits but py-spy still counts it active: aiosqlite's worker blocked in
# `SimpleQueue.get`. Left out of the shares (listed under "samples left out").
IDLE_LEAVES = ("_connection_worker_thread (aiosqlite/core.py:59)",)
_FRAME = re.compile(r"^(?P<func>.*?) \((?P<file>[^:()]*)(?::\d+)?\)$")


def _step_of_frame(frame: str) -> str | None:
    match = _FRAME.match(frame.strip())
    if match is None:
        return None
    func, file = match.group("func"), match.group("file")
    if "modelport/" not in file:
        return None
    for fragment, name, step in STEPS:
        if fragment in file and (not name or name == func):
            return step
    return None


def _library_of(frames: list[str]) -> str:
    text = ";".join(frames)
    for needle, label in (
        ("aiohttp/", "library: aiohttp (upstream reads, from the loop)"),
        ("uvicorn/", "library: uvicorn/httptools (server HTTP)"),
        ("httptools", "library: uvicorn/httptools (server HTTP)"),
        ("sqlalchemy/", "storage: batch writes (log rows, settlements)"),
        ("aiosqlite/", "storage: batch writes (log rows, settlements)"),
        ("asyncio/", "event loop"),
        ("uvloop", "event loop"),
    ):
        if needle in text:
            return label
    return "other"


def classify(stack: str) -> str:
    frames = stack.split(";")
    for frame in reversed(frames):  # innermost first
        step = _step_of_frame(frame)
        if step is not None:
            return step
    return _library_of(frames)


def read(path: Path) -> tuple[Counter[str], int]:
    """Samples per step, and the samples left out (a waiting thread)."""
    counts: Counter[str] = Counter()
    idle = 0
    for line in path.read_text().splitlines():
        stack, _, n = line.rpartition(" ")
        if not stack or not n.isdigit():
            continue
        if any(stack.endswith(leaf) for leaf in IDLE_LEAVES):
            idle += int(n)
            continue
        counts[classify(stack)] += int(n)
    return counts, idle


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("profiles", nargs="+", type=Path, help="py-spy raw (collapsed) files, one column each")
    args = parser.parse_args()
    read_all = [(p.stem, read(p)) for p in args.profiles]
    columns = [(name, counts) for name, (counts, _) in read_all]
    steps = sorted({s for _, c in columns for s in c}, key=lambda s: -sum(c[s] for _, c in columns))
    print("| step | " + " | ".join(name for name, _ in columns) + " |")
    print("|---|" + "---|" * len(columns))
    for step in steps:
        cells = [f"{100 * c[step] / max(sum(c.values()), 1):.1f} %" for _, c in columns]
        print(f"| {step} | " + " | ".join(cells) + " |")
    print("| samples | " + " | ".join(str(sum(c.values())) for _, c in columns) + " |")
    print("| samples left out (waiting thread) | " + " | ".join(str(idle) for _, (_, idle) in read_all) + " |")


if __name__ == "__main__":
    main()
