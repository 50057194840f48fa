"""Where the suite's CPU goes, per test file: the CPU seconds of the test process and of the processes it
started and reaped (`serve` subprocesses, CLIs, browsers), beside the wall time.

The parallel stage keeps both cores busy, so wall time alone hides which files cost the run its minutes;
CPU seconds add up across workers. Each test process writes `test-artifacts/cpu-<worker>.json` at its end
(set MODELPORT_TEST_CPU_REPORT=0 to skip); `python -m tests.support.cpu_report` sums the files and prints
the costliest. A module-scoped server's CPU lands on the test whose teardown reaped it: same file.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

ARTIFACTS = Path("test-artifacts")


def _cpu() -> tuple[float, float]:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, children.ru_utime + children.ru_stime


class CpuRecorder:
    """Adds each test's set-up, call and teardown CPU and wall time to its file's totals."""

    def __init__(self) -> None:
        self.files: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0])  # wall, own, children
        self._mark: tuple[float, float, float] | None = None

    def start(self) -> None:
        self._mark = (time.monotonic(), *_cpu())

    def stop(self, nodeid: str) -> None:
        if self._mark is None:
            return
        wall0, own0, children0 = self._mark
        own, children = _cpu()
        totals = self.files[nodeid.split("::", 1)[0]]
        totals[0] += time.monotonic() - wall0
        totals[1] += own - own0
        totals[2] += children - children0
        self._mark = None

    def write(self, worker: str, serve_starts: Mapping[str, int]) -> None:
        ARTIFACTS.mkdir(exist_ok=True)
        rows = {
            path: [*(round(v, 3) for v in totals), serve_starts.get(path, 0)] for path, totals in self.files.items()
        }
        (ARTIFACTS / f"cpu-{worker}-{os.getpid()}.json").write_text(json.dumps(rows, indent=0))


def summarise(paths: list[Path], top: int) -> str:
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0.0, 0.0])  # wall, own, children, starts
    for path in paths:
        for name, values in json.loads(path.read_text()).items():
            for i, value in enumerate(values):
                totals[name][i] += value
    lines = [f"{'cpu s':>8} {'own':>8} {'children':>8} {'wall s':>8} {'serves':>6}  file"]
    ranked = sorted(totals.items(), key=lambda kv: kv[1][1] + kv[1][2], reverse=True)
    for name, (wall, own, children, serves) in ranked[:top]:
        lines.append(f"{own + children:8.1f} {own:8.1f} {children:8.1f} {wall:8.1f} {serves:6.0f}  {name}")
    all_own = sum(v[1] for v in totals.values())
    all_children = sum(v[2] for v in totals.values())
    all_wall = sum(v[0] for v in totals.values())
    all_serves = sum(v[3] for v in totals.values())
    all_cpu = all_own + all_children
    lines.append(f"{all_cpu:8.1f} {all_own:8.1f} {all_children:8.1f} {all_wall:8.1f} {all_serves:6.0f}  (all files)")
    lines.append("")
    lines.append("the files that started the most `serve` processes:")
    for name, values in sorted(totals.items(), key=lambda kv: kv[1][3], reverse=True)[:top]:
        if values[3]:
            lines.append(f"{values[3]:6.0f}  {name}")
    return "\n".join(lines)


if __name__ == "__main__":
    top = int(sys.argv[1]) if len(sys.argv) > 1 else 40
    print(summarise(sorted(ARTIFACTS.glob("cpu-*.json")), top))
