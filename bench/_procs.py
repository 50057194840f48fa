"""The benchmark's processes: the fake upstream and `modelport serve`, started and stopped, and read from /proc.

CPU time and resident memory come from /proc (Linux), summed over a process and its descendants so that
`modelport serve --workers N` (a parent that forks N workers) is measured as a whole.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")
BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent

_URL_RE = re.compile(r"^text gateway:\s+(http://\S+)")
_KEY_RE = re.compile(r"^demo API key:\s+(\S+)")


# ---------------------------------------------------------------- /proc readers


def _stat_fields(pid: int) -> list[str]:
    raw = Path(f"/proc/{pid}/stat").read_text()
    # The command name (field 2) may hold spaces; everything after its closing parenthesis is space-separated.
    return raw[raw.rindex(")") + 2 :].split()


def descendants(pid: int) -> list[int]:
    """`pid` and every process below it."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            ppid = int(_stat_fields(int(entry))[1])
        except (OSError, ValueError, IndexError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        current = todo.pop()
        out.append(current)
        todo.extend(children.get(current, []))
    return out


def cpu_times(pids: list[int]) -> tuple[float, float]:
    """(user, system) CPU seconds of the given processes, all their threads."""
    user = system = 0
    for pid in pids:
        try:
            fields = _stat_fields(pid)
        except OSError:
            continue
        user, system = user + int(fields[11]), system + int(fields[12])  # utime, stime (stat fields 14, 15)
    return user / CLOCK_TICKS, system / CLOCK_TICKS


def cpu_seconds(pids: list[int]) -> float:
    return sum(cpu_times(pids))


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine has spent busy (all cores, everything but idle and iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return (sum(fields[:8]) - idle) / CLOCK_TICKS


def machine_idle_total() -> tuple[float, float]:
    """(idle, total) CPU seconds of the whole machine so far, all cores (idle includes iowait)."""
    fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return idle / CLOCK_TICKS, sum(fields[:8]) / CLOCK_TICKS


def load_average() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def rss_mb(pid: int) -> tuple[float, float]:
    """(current RSS, peak RSS) of one process in MB."""
    current = peak = 0.0
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            current = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    return current, peak


# ---------------------------------------------------------------- processes


@dataclass
class Proc:
    name: str
    process: subprocess.Popen[str]
    url: str
    extra: dict[str, str] = field(default_factory=dict)
    # From the start of the process to the first 200 of a chat completion through it (None: not measured).
    startup_seconds: float | None = None

    @property
    def pids(self) -> list[int]:
        return descendants(self.process.pid)

    def cpu(self) -> float:
        return cpu_seconds(self.pids)

    def rss_total_mb(self) -> tuple[float, int]:
        """Resident memory of the whole process tree (MB) and how many processes it has."""
        sizes = [cur for cur, _ in self.memory().values()]
        return sum(sizes), len(sizes)

    def memory(self) -> dict[str, tuple[float, float]]:
        out: dict[str, tuple[float, float]] = {}
        for pid in self.pids:
            try:
                out[str(pid)] = rss_mb(pid)
            except OSError:
                continue
        return out

    def stop(self, timeout: float = 30) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()


def _read_lines_until(process: subprocess.Popen[str], done: re.Pattern[str], timeout: float) -> list[str]:
    assert process.stdout is not None
    lines: list[str] = []
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if not line:
            raise RuntimeError(f"process exited with {process.wait()} before it was ready; output: {lines}")
        lines.append(line.rstrip("\n"))
        if done.match(line):
            return lines
    raise RuntimeError(f"process not ready after {timeout} s; output: {lines}")


def start_fake_upstream(*, delay_ms: float, chunks: int, frame_ms: float | None = None) -> Proc:
    """`bench/fake_upstream.py`; `frame_ms`: stream writes that far apart (default: spread over the delay)."""
    frame = ["--frame-ms", str(frame_ms)] if frame_ms is not None else []
    process = subprocess.Popen(
        [
            sys.executable,
            str(BENCH_DIR / "fake_upstream.py"),
            "--port",
            "0",
            "--delay-ms",
            str(delay_ms),
            "--chunks",
            str(chunks),
            *frame,
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        lines = _read_lines_until(process, re.compile(r"^ready "), 30)
    except BaseException:
        process.kill()
        raise
    return Proc("fake upstream", process, lines[-1].split()[1])


def catalog_toml(fake_url: str) -> str:
    # Tiny prices: a hold is still written per request (the billing guarantee), never refused.
    prices = '{ input = "0.01", output = "0.02" }'
    return f"""
[[text_models]]
id = "bench/fast"
prices = {prices}
max_output_tokens = 64
deployments = [{{ kind = "openai_chat", base_url = "{fake_url}/v1", model = "m" }}]

[[text_models]]
id = "bench/responses"
prices = {prices}
max_output_tokens = 64
deployments = [{{ kind = "openai_responses", base_url = "{fake_url}/v1", model = "m" }}]

[[text_models]]
id = "bench/translated"
prices = {prices}
max_output_tokens = 64
deployments = [{{ kind = "anthropic", base_url = "{fake_url}", model = "m" }}]
"""


CONFIG_TOML = """
[[tiers]]
name = "bench"
qualifying_topup_usd = "0"
inference_rpm = 100000000
query_rpm = 100000000
concurrent_media_tasks = 2
concurrent_requests = 100000
"""


def _limited_key(env: dict[str, str]) -> str:
    """A demo-team key with every per-key limit set, none of them reached in a run (issue 24's bench)."""
    made = subprocess.run(
        [sys.executable, "-m", "modelport", "admin", "key", "create", "demo", "--spend-limit", "100000",
         "--period", "month", "--models", "bench/*", "--rpm", "100000000", "--tpm", "1000000000",
         "--expires", "2099-01-01", "--allow-ip", "127.0.0.0/8", "--json"],
        env=env, cwd=REPO, capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    key: str = json.loads(made.stdout)["key"]
    return key


# For counted runs (`instr_guard.py`, `opcount_profile.py`): cached keys stay cached, reservations are not
# renewed, swept or returned while idle, so no time-driven database work falls inside a count.
COUNTING_ENV = {
    "PYTHONHASHSEED": "0",
    "MODELPORT_AUTH_CACHE_SECONDS": "3600",
    "MODELPORT_CREDIT__LEASE_SECONDS": "3600",
    "MODELPORT_CREDIT__SWEEP_INTERVAL_SECONDS": "3600",
    "MODELPORT_CREDIT__IDLE_RETURN_SECONDS": "3600",
}


def start_gateway(
    data_dir: Path,
    fake_url: str,
    *,
    workers: int,
    database_url: str | None,
    launcher: str | None = None,
    metrics: bool = False,
    limited_key: bool = False,
    extra_env: dict[str, str] | None = None,
    wrapper: list[str] | None = None,
    serve_args: list[str] | None = None,
    timeout_scale: float = 1.0,
) -> Proc:
    """`modelport serve` (or `python LAUNCHER serve ...`, a script standing in for `-m modelport` in experiments).

    `wrapper` goes before the interpreter (e.g. valgrind), `serve_args` after `serve`'s own; `timeout_scale`
    stretches the start-up deadlines for a wrapper that slows the process down."""
    catalog = data_dir / "catalog.toml"
    catalog.write_text(catalog_toml(fake_url))
    config = data_dir / "config.toml"
    config.write_text(CONFIG_TOML)
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
    env.update(
        {
            "MODELPORT_DATA_DIR": str(data_dir),
            "MODELPORT_CATALOG": str(catalog),
            "MODELPORT_CONFIG": str(config),
            "MODELPORT_DEMO_BALANCE_USD": "1000000",
            "MODELPORT_LOG_LEVEL": "WARNING",
        }
    )
    env.update(extra_env or {})
    if metrics:
        env["MODELPORT_METRICS_PORT"] = "0"  # Prometheus recording on, /metrics on a free port
    if database_url:
        env["MODELPORT_DATABASE_URL"] = database_url
        if not database_url.startswith("sqlite"):
            # `serve` migrates SQLite itself; PostgreSQL wants `modelport migrate` first (an empty database).
            subprocess.run([sys.executable, "-m", "modelport", "migrate"], env=env, cwd=REPO, check=True, timeout=120)
    started = time.monotonic()
    process = subprocess.Popen(
        [
            *(wrapper or []),
            sys.executable,
            *([launcher] if launcher else ["-m", "modelport"]),
            "serve",
            "--media-port",
            "0",
            "--text-port",
            "0",
            "--workers",
            str(workers),
            *(serve_args or []),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
        cwd=REPO,
    )
    try:
        lines = _read_lines_until(process, re.compile(r"^(demo API key:|demo team )"), 120 * timeout_scale)
        url = next(m.group(1) for line in lines if (m := _URL_RE.match(line)))
        key = next((m.group(1) for line in lines if (m := _KEY_RE.match(line))), None)
        if key is None:
            raise RuntimeError(f"no demo key in the banner (reused data dir?): {lines}")
        startup = wait_first_chat(url, "bench/fast", key, process, 60 * timeout_scale) - started
        if limited_key:
            key = _limited_key(env)
            wait_first_chat(url, "bench/fast", key, process, 60)
    except BaseException:
        process.kill()
        process.wait()
        raise
    return Proc("gateway", process, url, {"key": key, "data_dir": str(data_dir)}, startup)


def start_bare_proxy(
    fake_url: str,
    *,
    workers: int,
    wrapper: list[str] | None = None,
    env: dict[str, str] | None = None,
    timeout_scale: float = 1.0,
) -> Proc:
    """`bench/bare_proxy.py`: the same ASGI server and upstream client as modelport, and nothing else
    (`wrapper`, `timeout_scale`: as for `start_gateway`)."""
    started = time.monotonic()
    process = subprocess.Popen(
        [
            *(wrapper or []),
            sys.executable,
            str(BENCH_DIR / "bare_proxy.py"),
            "--port",
            "0",
            "--upstream",
            fake_url,
            "--workers",
            str(workers),
        ],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        lines = _read_lines_until(process, re.compile(r"^ready "), 30 * timeout_scale)
        url = lines[-1].split()[1]
        startup = wait_first_chat(url, "m", None, process, 60 * timeout_scale) - started
    except BaseException:
        process.kill()
        process.wait()
        raise
    return Proc("bare proxy", process, url, {}, startup)


PEER_DIR = REPO / ".tools" / "litellm"
PEER_KEY = "sk-bench-peer"


def peer_available(peer_dir: Path = PEER_DIR) -> bool:
    return (peer_dir / "bin" / "litellm").exists()


def start_peer(data_dir: Path, fake_url: str, *, workers: int, peer_dir: Path = PEER_DIR) -> Proc:
    """LiteLLM's proxy (the most-used Python gateway) from its own venv under .tools/litellm (never a project
    dependency), `model: m` routed to the fake upstream as an OpenAI-compatible model, with its documented
    production switches (no request logging to stdout, JSON logs off, several workers). `peer_dir`: the venv
    (another checkout's `.tools/litellm`, e.g. a worktree's main checkout)."""
    config = data_dir / "litellm.yaml"
    config.write_text(
        "model_list:\n"
        "  - model_name: m\n"
        "    litellm_params:\n"
        "      model: openai/m\n"
        f"      api_base: {fake_url}/v1\n"
        "      api_key: sk-fake\n"
        "general_settings:\n"
        f"  master_key: {PEER_KEY}\n"
        "litellm_settings:\n"
        "  set_verbose: false\n"
        "  request_timeout: 60\n"
    )
    port = _free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
    env.update({"LITELLM_LOG": "ERROR", "LITELLM_MODE": "PRODUCTION", "DISABLE_ADMIN_UI": "True"})
    started = time.monotonic()
    process = subprocess.Popen(
        [
            str(peer_dir / "bin" / "litellm"),
            "--config",
            str(config),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--num_workers",
            str(workers),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
        cwd=data_dir,
        text=True,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        startup = wait_first_chat(url, "m", PEER_KEY, process, 180) - started
    except BaseException:
        process.kill()
        process.wait()
        raise
    return Proc("python peer", process, url, {"key": PEER_KEY}, startup)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_first_chat(url: str, model: str, key: str | None, process: subprocess.Popen[str], timeout: float) -> float:
    """Send a small Chat Completions request until one answers 200; return the monotonic time it did."""
    body = json.dumps({"model": model, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4}).encode()
    headers = {"content-type": "application/json"}
    if key:
        headers["authorization"] = f"Bearer {key}"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: the server exited with {process.returncode}")
        request = urllib.request.Request(url + "/v1/chat/completions", data=body, headers=headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=5) as response:
                if response.status == 200:
                    return time.monotonic()
        except OSError:
            pass
        time.sleep(0.02)
    raise RuntimeError(f"{url}: no 200 within {timeout} s")


def run_main(main: Coroutine[Any, Any, int]) -> int:
    """A bench's main coroutine on uvloop when installed (the gateway's own loop), else asyncio's."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(main)
    return uvloop.run(main)
