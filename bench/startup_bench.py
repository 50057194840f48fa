"""Start-up time and memory of `modelport serve`: how long to the first 200, and how much each process holds.

    .venv/bin/python bench/startup_bench.py [--repeat 3] [--workers 1 2] [--launcher SCRIPT]

For each `--workers` value it starts `modelport serve` on a fresh data dir (first start: SQLite created
and migrated, catalog imported, demo team made), stops it, and starts it again on the same data dir
(a later start), `--repeat` times each. Timed from the process's start to the first 200 of
`GET /readyz` on the text gateway (database reachable, schema at head) and to the first 200 of
`GET /v1/models` with the demo key (auth, database, catalog: the first real API answer). Then, after
one idle second, the resident memory of the parent and of each worker (the embedded text model is not
loaded: it loads on its first request). Prints a table and the medians, with the CPU seconds the process
tree had used at the first 200 (on a busy machine wall-clock times mostly measure the other load).
`--launcher SCRIPT` runs `python SCRIPT serve ...` instead of `python -m modelport serve ...` (another
checkout's code, or a patched start-up), as in gateway_bench.py.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import _procs

_KEY_RE = re.compile(r"^demo API key:\s+(\S+)")


def _get(url: str, key: str | None = None) -> int:
    request = urllib.request.Request(url, headers={"authorization": f"Bearer {key}"} if key else {})
    try:
        with urllib.request.urlopen(request, timeout=5) as response:
            return int(response.status)
    except OSError:
        return 0


def one_start(data_dir: Path, workers: int, key: str | None, launcher: str | None = None) -> dict[str, object]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
    env.update({"MODELPORT_DATA_DIR": str(data_dir), "MODELPORT_LOG_LEVEL": "WARNING"})
    started = time.monotonic()
    process = subprocess.Popen(
        [
            sys.executable,
            *([launcher] if launcher else ["-m", "modelport"]),
            "serve",
            *("--media-port", "0", "--text-port", "0", "--workers"),
            str(workers),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
        cwd=_procs.REPO,
    )
    assert process.stdout is not None
    try:
        url = None
        while True:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"serve exited with {process.wait()}")
            if m := re.match(r"^text gateway:\s+(http://\S+)", line):
                url = m.group(1)
            if m := _KEY_RE.match(line):
                key = m.group(1)
            if line.startswith(("demo API key:", "demo team ")):
                break
        banner = time.monotonic() - started
        assert url is not None
        ready = models = cpu_s = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (ready is None or models is None):
            if ready is None and _get(url + "/readyz") == 200:
                ready = time.monotonic() - started
            if ready is not None and models is None and key and _get(url + "/v1/models", key) == 200:
                models = time.monotonic() - started
                # CPU spent so far (the CLI's carries over its exec into the supervisor: same PID): on a busy
                # machine the wall-clock figures mostly measure the other load, these much less.
                cpu_s = _procs.cpu_seconds(_procs.descendants(process.pid))
            time.sleep(0.01)
        time.sleep(1.0)
        memory = _procs.Proc("serve", process, url).memory()
        root = str(process.pid)
        parent = memory.pop(root)[0]
        return {
            "banner_s": round(banner, 3),
            "readyz_s": round(ready, 3) if ready is not None else None,
            "models_s": round(models, 3) if models is not None else None,
            "cpu_s": round(cpu_s, 3) if cpu_s is not None else None,
            "parent_mb": round(parent, 1),
            "workers_mb": [round(cur, 1) for cur, _ in memory.values()],
            "total_mb": round(parent + sum(cur for cur, _ in memory.values()), 1),
            "key": key,
        }
    finally:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="*", default=[1, 2])
    parser.add_argument("--launcher", default=None, help="a script run instead of `-m modelport`")
    args = parser.parse_args()
    rows: list[tuple[int, str, dict[str, object]]] = []
    load_before = os.getloadavg()[0]
    for workers in args.workers:
        for _ in range(args.repeat):
            data_dir = Path(tempfile.mkdtemp(prefix="modelport-startup-"))
            try:
                first = one_start(data_dir, workers, None, args.launcher)
                key = first["key"] if isinstance(first["key"], str) else None
                rows.append((workers, "first", first))
                rows.append((workers, "later", one_start(data_dir, workers, key, args.launcher)))
            finally:
                shutil.rmtree(data_dir, ignore_errors=True)
    print(
        f"{'workers':<8}{'start':<7}{'banner s':>9}{'readyz s':>9}{'models s':>9}{'CPU s':>7}{'parent MiB':>11}"
        "  workers MiB"
    )
    for workers, kind, r in rows:
        print(
            f"{workers:<8}{kind:<7}{r['banner_s']!s:>9}{r['readyz_s']!s:>9}{r['models_s']!s:>9}{r['cpu_s']!s:>7}"
            f"{r['parent_mb']!s:>11}  {r['workers_mb']}"
        )
    print()
    for workers in args.workers:
        for kind in ("first", "later"):
            picked = [r for w, k, r in rows if w == workers and k == kind]
            models = [float(str(r["models_s"])) for r in picked if r["models_s"] is not None]
            parents = [float(str(r["parent_mb"])) for r in picked]
            served = [float(mb) for r in picked if isinstance(r["workers_mb"], list) for mb in r["workers_mb"]]
            first_200 = statistics.median(models) if models else float("nan")
            cpus = [float(str(r["cpu_s"])) for r in picked if r["cpu_s"] is not None]
            cpu = statistics.median(cpus) if cpus else float("nan")
            print(
                f"median, --workers {workers}, {kind} start: first 200 of /v1/models {first_200:.2f} s "
                f"(CPU {cpu:.2f} s), "
                f"parent {statistics.median(parents):.0f} MiB"
                + (f", workers {statistics.median(served):.0f} MiB" if served else "")
            )
    print(f"load average (1 min) before {load_before:.2f}, after {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
