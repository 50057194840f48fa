"""A free TCP port for a server whose port a test must know before it starts (a public URL in its settings,
an SMTP server that checks its own port, a port that must refuse connections).

Not from the kernel's ephemeral range (`/proc/sys/net/ipv4/ip_local_port_range`, 32768-60999 by default),
where binding port 0 picks one: such a port was free when picked, but any outgoing connection of any process
could take it as its source port before the server bound it ("Address already in use", CI 2026-12-04, with
three test processes and their servers making thousands of connections). Below that range only listeners
take ports, and each test process (xdist worker, the serial stage) picks from a range of its own, so two
processes never hand out the same one.
"""

from __future__ import annotations

import os
import random
import socket
from pathlib import Path

FIRST = 20000  # above the well-known services this machine runs (PostgreSQL 5432, Redis 6379, ...)
SLOTS = 4  # the serial stage and three xdist workers (more workers share ranges, still checked by binding)
_given: set[int] = set()


def _ephemeral_start() -> int:
    try:
        return int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _slot() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")  # gw0, gw1, ...; none in the serial stage
    if worker.startswith("gw") and worker[2:].isdigit():
        return (int(worker[2:]) + 1) % SLOTS
    return 0


def free_port() -> int:
    """A port nobody listens on now, not handed out before by this process."""
    span = max(100, (_ephemeral_start() - FIRST) // SLOTS)
    low = FIRST + _slot() * span
    candidates = list(range(low, low + span))
    random.shuffle(candidates)
    for port in candidates:
        if port in _given:
            continue
        with socket.socket() as sock:
            try:
                sock.bind(("127.0.0.1", port))
            except OSError:
                continue
        _given.add(port)
        return port
    raise RuntimeError(f"no free port in {low}-{low + span - 1}")
