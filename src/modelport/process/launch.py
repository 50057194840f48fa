"""What `modelport serve` does between its start-up work and serving: bind the listening sockets and the
`/metrics` socket, raise the open-file limit, and with `--workers N` fork the serving processes and exec the
supervisor.

Kept apart from `server.py`, which forks the serving processes (`server.fork_serving`) and is what they run.
"""

from __future__ import annotations

import logging
import os
import resource
import site
import socket
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from modelport import metrics
from modelport.settings import Settings

log = logging.getLogger("modelport.server")


def bind_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def raise_open_file_limit() -> int:
    """Raise this process's soft RLIMIT_NOFILE to its hard limit (children inherit it); return the new soft one."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or hard > soft:
        target = hard if hard != resource.RLIM_INFINITY else max(soft, 1 << 20)
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError) as exc:
            log.warning("could not raise the open-file limit from %s to %s: %s", soft, target, exc)
    return soft


@dataclass(frozen=True)
class MetricsEndpoint:
    url: str
    directory: Path | None  # the multiprocess directory, when there are several serving processes
    sock: socket.socket | None = None  # bound for the supervisor, which serves it after the exec


def start_metrics(settings: Settings, processes: int) -> MetricsEndpoint | None:
    """`/metrics` on its own port, before any serving process starts. With one process it is served from here; with
    several, the socket is only bound (its port goes in the banner) and the supervisor serves it."""
    if settings.metrics_port is None:
        return None
    multi = processes > 1 or metrics.MULTIPROC_ENV in os.environ
    directory = metrics.prepare_multiprocess_dir() if multi else None
    host = settings.metrics_host or settings.host
    sock = None
    if processes > 1:
        sock = bind_socket(host, settings.metrics_port)
        port = sock.getsockname()[1]
    else:
        port = metrics.serve_metrics(host, settings.metrics_port, directory)
    shown = f"[{host}]" if ":" in host else host
    return MetricsEndpoint(f"http://{shown}:{port}/metrics", directory, sock)


def serving_argv(media_sock: socket.socket, text_sock: socket.socket) -> list[str]:
    return [
        sys.executable,
        "-m",
        "modelport.process.serving",
        *("--media-fd", str(media_sock.fileno()), "--text-fd", str(text_sock.fileno())),
    ]


def serving_environment(settings: Settings) -> None:
    """The serving processes load the settings from the environment, so what the command line overrode is put
    there: the interface and the bound ports (port 0 picked real ones), and `--no-workers`."""
    os.environ["MODELPORT_HOST"] = settings.host
    os.environ["MODELPORT_MEDIA_PORT"] = str(settings.media_port)
    os.environ["MODELPORT_TEXT_PORT"] = str(settings.text_port)
    if not settings.tasks.run_workers:
        os.environ["MODELPORT_TASKS__RUN_WORKERS"] = "false"
    _keep_import_path()


def exec_supervisor(
    settings: Settings,
    media_sock: socket.socket,
    text_sock: socket.socket,
    processes: int,
    metrics_endpoint: MetricsEndpoint | None,
    forked: list[int],
) -> NoReturn:
    """Replace this process (same PID, sockets kept open, `forked` serving processes still its children) with
    the lean `modelport.process.supervisor`, which starts the serving processes not forked yet."""
    serving_environment(settings)
    argv = [sys.executable, "-m", "modelport.process.supervisor", "--workers", str(processes)]
    argv += [arg for pid in forked for arg in ("--adopt", str(pid))]
    argv += ["--socket-fd", str(media_sock.fileno()), "--socket-fd", str(text_sock.fileno())]
    if metrics_endpoint is not None and metrics_endpoint.sock is not None and metrics_endpoint.directory is not None:
        argv += ["--metrics-fd", str(metrics_endpoint.sock.fileno()), "--metrics-dir", str(metrics_endpoint.directory)]
    argv += ["--log-level", settings.log_level]
    argv += ["--log-json", "auto" if settings.log_json is None else str(settings.log_json).lower()]
    argv += ["--", *serving_argv(media_sock, text_sock)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)


def _keep_import_path() -> None:
    """The new interpreters import this same `modelport` (a launcher may have put another checkout first on
    sys.path): its directory goes first on PYTHONPATH, unless it is a site-packages directory already."""
    here = str(Path(__file__).resolve().parents[2])  # the directory holding the `modelport` package
    if here in site.getsitepackages() or here in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        return
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
