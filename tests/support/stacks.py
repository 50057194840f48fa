"""What every running modelport process is doing, for a test that found a server not answering: py-spy's
dump of each one's Python stacks (all threads), so a rare stall in CI says where it stalled."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path


def _py_spy() -> str | None:
    beside = Path(sys.executable).with_name("py-spy")  # the venv's, from the test extra
    return str(beside) if beside.exists() else shutil.which("py-spy")


def _parent(pid: int) -> int:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    return int(stat.rsplit(")", 1)[1].split()[1])  # the field after the state; the name may hold spaces


def _descends_from(pid: int, ancestor: int) -> bool:
    while pid > 1:
        pid = _parent(pid)
        if pid == ancestor:
            return True
    return False


def modelport_stacks() -> str:
    """The stacks of the modelport processes this test process started (not another xdist worker's)."""
    listed = subprocess.run(
        ["pgrep", "-f", "--", "-m modelport"], capture_output=True, text=True, timeout=30, check=False
    )
    pids = [pid for pid in listed.stdout.split() if _descends_from(int(pid), os.getpid())]
    if not pids:
        return "no modelport process is running"
    py_spy = _py_spy()
    if py_spy is None:
        return f"modelport processes {pids}; py-spy is not installed (the test extra has it): no stacks"
    dumps = []
    for pid in pids:
        try:
            got = subprocess.run(
                [py_spy, "dump", "--pid", pid], capture_output=True, text=True, timeout=60, check=False
            )
            dumps.append(f"--- process {pid}\n{got.stdout}{got.stderr}")
        except subprocess.TimeoutExpired:
            dumps.append(f"--- process {pid}: py-spy dump took over 60 s")
    return "\n".join(dumps)
