"""Run `modelport serve` as a real subprocess for end-to-end tests.

Ports are picked by the OS (port 0) and read back from the start-up banner, together with the demo key.
"""

from __future__ import annotations

import os
import queue
import re
import secrets
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from tests.support.databases import migrated_sqlite_file
from tests.support.stacks import modelport_stacks

_URL_RE = re.compile(r"^(media host|text gateway):\s+(http://\S+)")
_KEY_RE = re.compile(r"^demo API key:\s+(\S+)")
_REDIS_PREFIX = "mp-test-" + secrets.token_hex(6)
# `serve` starts per test file in this test process (tests/support/cpu_report.py prints them): each costs
# ~2.5 CPU seconds before its first request, the main reason to share a server.
starts: Counter[str] = Counter()


def count_start() -> None:
    """One more `serve` start for the test file running now (pytest's PYTEST_CURRENT_TEST names it)."""
    starts[os.environ.get("PYTEST_CURRENT_TEST", "(outside a test)").split("::", 1)[0]] += 1


@dataclass
class RunningServer:
    process: subprocess.Popen[str]
    media_url: str
    text_url: str
    demo_key: str | None
    env: dict[str, str]
    banner: list[str]

    def cli(self, *args: str) -> subprocess.CompletedProcess[str]:
        """Run `modelport ARGS` against the same data dir and database."""
        return subprocess.run(
            [sys.executable, "-m", "modelport", *args], env=self.env, capture_output=True, text=True, timeout=60
        )

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 60) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
        return self.process.wait(timeout=timeout)


def child_pids(parent: int) -> list[int]:
    """The process ids of `parent`'s children (`pgrep -P`, waited for: `os.popen(...).read()` left its pipe
    and process to the garbage collector, which reported both as ResourceWarnings in a later test)."""
    listed = subprocess.run(["pgrep", "-P", str(parent)], capture_output=True, text=True, timeout=30, check=False)
    return [int(p) for p in listed.stdout.split()]


def worker_pids(parent: int) -> list[int]:
    """The serving processes of `serve --workers N`: the supervisor's live children (those the CLI forked before
    exec'ing it carry the CLI's command line, those it started itself `python -m modelport.process.serving`)."""
    found = []
    for pid in child_pids(parent):
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if b"modelport.process.serving" in cmdline or b"serve" in cmdline:  # a dead one not reaped yet has none
            found.append(pid)
    return found


def server_env(data_dir: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
    env.update(
        {
            "MODELPORT_DATA_DIR": str(data_dir),
            "MODELPORT_AUTH_CACHE_SECONDS": "0",
            "MODELPORT_LOG_LEVEL": "WARNING",
            # The servers of parallel test processes (xdist workers) share one Redis but never its keys or
            # channels: one prefix per test process (a test may still set its own).
            "MODELPORT_RATELIMIT_PREFIX": _REDIS_PREFIX,
        }
    )
    env.update(extra)
    return env


@contextmanager
def run_server(
    data_dir: Path,
    *args: str,
    startup_timeout: float = 120,
    env: dict[str, str] | None = None,
    preexec_fn: Callable[[], None] | None = None,
    python_args: Sequence[str] = ("-m", "modelport"),
    fresh_database: bool = False,
    **env_extra: str,
) -> Iterator[RunningServer]:
    """`env` and `env_extra` are added to the server's environment (`env` for names that are not identifiers).

    `preexec_fn` runs in the child before `modelport` starts (e.g. to lower its open-file limit);
    `python_args` replace `-m modelport` (e.g. `-c CODE` that wraps the CLI). A server on the default SQLite
    file in a data directory that has none starts from a copy of the test process's migrated template,
    which spares each start its migration run; `fresh_database=True` lets `serve` create and migrate it."""
    env = server_env(data_dir, **(env or {}), **env_extra)
    database = Path(env["MODELPORT_DATA_DIR"]) / "modelport.db"
    if not fresh_database and "MODELPORT_DATABASE_URL" not in env and not database.exists():
        database.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        migrated_sqlite_file(database)
    count_start()
    process = subprocess.Popen(
        [sys.executable, *python_args, "serve", "--media-port", "0", "--text-port", "0", *args],
        env=env,
        stdout=subprocess.PIPE,
        stderr=None,
        text=True,
        preexec_fn=preexec_fn,
    )
    try:
        server = _read_banner(process, env, startup_timeout)
        _wait_ready(server, startup_timeout)
        yield server
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        if process.stdout is not None:
            process.stdout.close()  # else a ResourceWarning when the GC finds it


def _read_banner(process: subprocess.Popen[str], env: dict[str, str], timeout: float) -> RunningServer:
    """The URLs and demo key from the start-up banner, within `timeout` (a reading thread: a server stuck
    before its banner must fail the test within the timeout, not block it on `readline`)."""
    assert process.stdout is not None
    stdout = process.stdout
    lines: queue.Queue[str] = queue.Queue()

    def read() -> None:
        while True:
            line = stdout.readline()
            lines.put(line)
            if not line or line.startswith(("demo API key:", "demo team ")):
                return

    threading.Thread(target=read, name="banner reader", daemon=True).start()
    urls: dict[str, str] = {}
    key: str | None = None
    banner: list[str] = []
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            raise RuntimeError(f"no whole banner within {timeout} s; so far: {banner}\n{modelport_stacks()}") from None
        if not line:
            raise RuntimeError(f"server exited early with {process.wait()}; banner so far: {banner}")
        banner.append(line.rstrip("\n"))
        if m := _URL_RE.match(line):
            urls[m.group(1)] = m.group(2)
        if m := _KEY_RE.match(line):
            key = m.group(1)
        if line.startswith(("demo API key:", "demo team ")):
            break
    if len(urls) != 2:
        raise RuntimeError(f"no URLs in banner: {banner}")
    return RunningServer(process, urls["media host"], urls["text gateway"], key, env, banner)


def _wait_ready(server: RunningServer, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if (
                httpx.get(server.media_url + "/openapi.json", timeout=2).status_code == 200
                and httpx.get(server.text_url + "/openapi.json", timeout=2).status_code == 200
            ):
                return
        except httpx.TransportError:
            pass
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited with {server.process.returncode}")
        time.sleep(0.1)
    raise RuntimeError("server did not become ready")
