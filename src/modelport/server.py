"""`modelport serve`: both hosts, each on its own port, in one or several worker processes.

The CLI runs the one-off start-up work and binds both listening sockets, then either serves in-process
(one worker) or execs the lean `modelport.supervisor`, which starts N worker processes
(`modelport.serving`) that share the sockets (the kernel spreads connections).
Every worker runs both apps in one event loop over one shared service container. SIGTERM/SIGINT stop accepting,
finish in-flight requests, then close the services (which drains pending log and ledger writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import os
import resource
import signal
import site
import socket
import sys
from collections.abc import Generator
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from modelport import metrics
from modelport.logs import configure_logging
from modelport.settings import Settings
from modelport.web.errors import Host
from modelport.web.http_protocol import ConnectionLimits, protocol_for

log = logging.getLogger("modelport.server")
# After the grace period: time for cut streams to send their error event and be logged.
CUT_SECONDS = 5
# File descriptors kept free of client connections: database and Redis pools, upstream calls, files.
RESERVED_FDS = 256
# Allocations between collections of the youngest generation (the default is 700); see serve_both.
GC_YOUNG_THRESHOLD = 20_000


class _Server(uvicorn.Server):
    """A uvicorn server whose signals are handled by us (two servers share one loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


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


def connection_limits(settings: Settings) -> ConnectionLimits:
    server = settings.server
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    cap = min(server.max_connections, max(16, soft - RESERVED_FDS))
    if cap < server.max_connections:
        log.info("at most %s connections per process (open-file limit %s)", cap, soft)
    return ConnectionLimits(
        max_header_bytes=server.max_header_bytes,
        header_timeout=server.header_timeout_seconds,
        body_timeout=server.body_timeout_seconds,
        max_connections=cap,
    )


def _config(app: object, settings: Settings, host: Host, limits: ConnectionLimits) -> uvicorn.Config:
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        loop="uvloop",
        http=protocol_for(host, limits),
        ws="none",  # no WebSocket routes: uvicorn's "auto" would import websockets when it is installed
        lifespan="on",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=math.ceil(settings.server.graceful_shutdown_seconds) + CUT_SECONDS,
        timeout_keep_alive=max(1, round(settings.server.keep_alive_seconds)),
        server_header=False,
    )


def import_apps() -> None:
    """Import the apps ahead of `serve_both` (which imports them itself): `serve --workers 1` does it while
    a first start's migration runs in its child process."""
    import modelport.apps.assemble
    import modelport.apps.media
    import modelport.apps.text
    import modelport.gateway.pipeline  # noqa: F401


async def serve_both(settings: Settings, media_sock: socket.socket, text_sock: socket.socket) -> None:
    # The apps are imported here, in the serving process: the supervisor of several workers never needs them.
    from modelport.apps.assemble import build_services
    from modelport.apps.media import create_media_app
    from modelport.apps.text import create_text_app
    from modelport.gateway.pipeline import TEXT_GATEWAY

    services = build_services(settings)
    limits = connection_limits(settings)
    media = _Server(_config(create_media_app(services), settings, "media", limits))
    text = _Server(_config(create_text_app(services), settings, "text", limits))
    loop = asyncio.get_running_loop()
    # Everything built so far (modules, apps, services: ~160,000 objects) lives as long as the process: move
    # it out of the collector's generations, so full collections (~50 ms idle, 240 ms on a busy 2-core
    # machine, on the event loop) stop rescanning it. Only the young generations are collected first: a
    # full collection here would cost start-up as much.
    gc.collect(1)
    gc.freeze()
    # A request allocates a few thousand short-lived objects; with the default 700-object youngest
    # generation, survivors of half-finished requests were promoted and rescanned by the older
    # generations' collections. A larger youngest generation lets them die young: 10-15% less CPU per
    # stream in bench/gateway_bench.py (docs/architecture.md, Performance).
    gc.set_threshold(GC_YOUNG_THRESHOLD, 20, 50)

    grace = settings.server.graceful_shutdown_seconds
    drain = settings.server.drain_seconds
    stopping = closed = False

    def close_sockets() -> None:
        nonlocal closed
        if closed:
            return
        closed = True
        media.should_exit = True
        text.should_exit = True
        # Streams still running when the grace period ends get the protocol's error event; uvicorn
        # waits CUT_SECONDS more for them to send it before it cancels what is left.
        loop.call_later(grace, services[TEXT_GATEWAY].live_streams.cut_all)

    def stop() -> None:
        nonlocal stopping
        services.draining = True  # /readyz: 503 from now on
        if stopping or drain <= 0:  # a second signal stops waiting for the load balancer
            close_sockets()
            return
        stopping = True
        loop.call_later(drain, close_sockets)

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    await asyncio.gather(media.serve([media_sock]), text.serve([text_sock]))


def worker_main(settings: Settings, media_sock: socket.socket, text_sock: socket.socket) -> None:
    configure_logging(settings.log_level, json_lines=settings.log_json)
    import uvloop

    uvloop.run(serve_both(settings, media_sock, text_sock))


@dataclass(frozen=True)
class MetricsEndpoint:
    url: str
    directory: Path | None  # the multiprocess directory, when the workers are separate processes
    sock: socket.socket | None = None  # bound for the supervisor, which serves it after the exec


def start_metrics(settings: Settings, workers: int) -> MetricsEndpoint | None:
    """`/metrics` on its own port, before any worker starts. With one process it is served from here; with
    several, the socket is only bound (its port goes in the banner) and the supervisor serves it."""
    if settings.metrics_port is None:
        return None
    multi = workers > 1 or metrics.MULTIPROC_ENV in os.environ
    directory = metrics.prepare_multiprocess_dir() if multi else None
    host = settings.metrics_host or settings.host
    sock = None
    if workers > 1:
        sock = bind_socket(host, settings.metrics_port)
        port = sock.getsockname()[1]
    else:
        port = metrics.serve_metrics(host, settings.metrics_port, directory)
    shown = f"[{host}]" if ":" in host else host
    return MetricsEndpoint(f"http://{shown}:{port}/metrics", directory, sock)


def run(
    settings: Settings,
    media_sock: socket.socket,
    text_sock: socket.socket,
    workers: int,
    *,
    metrics_endpoint: MetricsEndpoint | None = None,
) -> None:
    raise_open_file_limit()  # inherited across the exec and by every worker
    if workers <= 1:
        worker_main(settings, media_sock, text_sock)
        return
    exec_supervisor(settings, media_sock, text_sock, workers, metrics_endpoint)


def worker_argv(media_sock: socket.socket, text_sock: socket.socket) -> list[str]:
    return [
        sys.executable,
        "-m",
        "modelport.serving",
        *("--media-fd", str(media_sock.fileno()), "--text-fd", str(text_sock.fileno())),
    ]


def exec_supervisor(
    settings: Settings,
    media_sock: socket.socket,
    text_sock: socket.socket,
    workers: int,
    metrics_endpoint: MetricsEndpoint | None,
) -> None:
    """Replace this process (same PID, sockets kept open) with the lean `modelport.supervisor`.

    The workers load the settings from the environment, so what the command line overrode is put there:
    the interface and the bound ports (port 0 picked real ones), and `--no-workers`."""
    os.environ["MODELPORT_HOST"] = settings.host
    os.environ["MODELPORT_MEDIA_PORT"] = str(settings.media_port)
    os.environ["MODELPORT_TEXT_PORT"] = str(settings.text_port)
    if not settings.tasks.run_workers:
        os.environ["MODELPORT_TASKS__RUN_WORKERS"] = "false"
    _keep_import_path()
    argv = [sys.executable, "-m", "modelport.supervisor", "--workers", str(workers)]
    argv += ["--socket-fd", str(media_sock.fileno()), "--socket-fd", str(text_sock.fileno())]
    if metrics_endpoint is not None and metrics_endpoint.sock is not None and metrics_endpoint.directory is not None:
        argv += ["--metrics-fd", str(metrics_endpoint.sock.fileno()), "--metrics-dir", str(metrics_endpoint.directory)]
    argv += ["--log-level", settings.log_level]
    argv += ["--log-json", "auto" if settings.log_json is None else str(settings.log_json).lower()]
    argv += ["--", *worker_argv(media_sock, text_sock)]
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(sys.executable, argv)


def _keep_import_path() -> None:
    """The new interpreters import this same `modelport` (a launcher may have put another checkout first on
    sys.path): its directory goes first on PYTHONPATH, unless it is a site-packages directory already."""
    here = str(Path(__file__).resolve().parent.parent)
    if here in site.getsitepackages() or here in os.environ.get("PYTHONPATH", "").split(os.pathsep):
        return
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (here, os.environ.get("PYTHONPATH")) if p)
