"""A serving process of `modelport serve`: both hosts, each on its own port, in one event loop.

The CLI runs the one-off start-up work, imports the apps and binds both listening sockets (`launch.py`), then
either serves in-process (one process: `serving_main` here) or forks N serving processes (`fork_serving`:
they start with the apps imported) and execs the lean `modelport.process.supervisor`, which adopts them and starts
any replacement as `python -m modelport.process.serving`. They share the sockets (the kernel spreads connections).
Every one runs both apps in one event loop over one shared service container. SIGTERM/SIGINT stop accepting, finish
in-flight requests, then close the services (which drains pending log and ledger writes).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import gc
import logging
import math
import os
import resource
import signal
import socket
import sys
import threading
import time
import traceback
from collections.abc import Generator
from typing import NoReturn

import uvicorn

from modelport.logs import configure_logging
from modelport.process import launch
from modelport.settings import Settings, load_settings
from modelport.web.errors import Host
from modelport.web.http_protocol import ConnectionLimits, protocol_for

log = logging.getLogger("modelport.server")
# After the grace period: time for cut streams to send their error event and be logged.
CUT_SECONDS = 5
# File descriptors kept free of client connections: database and Redis pools, upstream calls, files.
RESERVED_FDS = 256
# Allocations between collections of the youngest generation (the default is 700); see serve_both.
GC_YOUNG_THRESHOLD = 20_000
# Blocked in the CLI from its first fork to the supervisor's handlers (the mask survives the exec): a signal
# arriving meanwhile waits, and the supervisor forwards it to the serving processes.
SIGNALS = (signal.SIGTERM, signal.SIGINT)
# How long the CLI waits for the threads of its start-up work to end before forking (see fork_serving).
THREADS_GONE_SECONDS = 2.0


class _Server(uvicorn.Server):
    """A uvicorn server whose signals are handled by us (two servers share one loop)."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


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
        # X-Forwarded-For/-Proto only from the configured proxies, so scope["client"] is the real client;
        # with none configured they are ignored (uvicorn's own default trusts loopback).
        proxy_headers=bool(settings.server.trusted_proxies),
        forwarded_allow_ips=list(settings.server.trusted_proxies),
    )


def import_apps() -> None:
    """Import the apps and the event loop ahead of `serving_main` (which imports them itself): `serve` does it
    while a first start's migration runs in its child process, and before it forks serving processes."""
    import uvloop  # noqa: F401

    import modelport.apps.assemble
    import modelport.apps.media
    import modelport.apps.text
    import modelport.gateway.pipeline  # noqa: F401


async def serve_both(settings: Settings, media_sock: socket.socket, text_sock: socket.socket) -> None:
    # The apps are imported here, in the serving process: the supervisor of several serving processes never needs them.
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
    gc.enable()  # `serve` imported with the collector off (cli.serve)
    # A request allocates a few thousand short-lived objects; with the default 700-object youngest
    # generation, survivors of half-finished requests were promoted and rescanned by the older
    # generations' collections. A larger youngest generation lets them die young: 10-15% less CPU per
    # stream in bench/gateway_bench.py (docs/architecture/performance.md).
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


def serving_main(settings: Settings, media_sock: socket.socket, text_sock: socket.socket) -> None:
    configure_logging(settings.log_level, json_lines=settings.log_json)
    import uvloop

    uvloop.run(serve_both(settings, media_sock, text_sock))


def fork_serving(
    processes: int, media_sock: socket.socket, text_sock: socket.socket, metrics_endpoint: launch.MetricsEndpoint | None
) -> list[int]:
    """Fork the serving processes from the CLI, which has imported what they run: each starts without
    importing anything again (a fresh interpreter spent ~1 s of CPU on it, and N of them started at once).

    Safe only while this process has one thread and no event loop (the start-up work's loop has closed and
    its database pool is disposed): otherwise nothing is forked ([]) and the supervisor spawns them fresh."""
    # A database driver's thread (aiosqlite's, one per connection) may still be finishing its last step after
    # its connection closed.
    deadline = time.monotonic() + THREADS_GONE_SECONDS
    for thread in threading.enumerate():
        if thread is not threading.current_thread():
            thread.join(max(0.0, deadline - time.monotonic()))
    if threading.active_count() != 1:
        names = [t.name for t in threading.enumerate() if t is not threading.current_thread()]
        log.warning("starting fresh serving processes: the CLI still runs threads %s", names)
        return []
    import_apps()  # done already by `serve`
    # What is imported now lives as long as the serving processes: out of the collector's generations (with no
    # collection first: `serve` imported with the collector off, so there is little garbage), so their
    # collections neither rescan it nor touch (and copy) its pages.
    gc.freeze()
    sys.stdout.flush()
    sys.stderr.flush()
    signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    pids = []
    for _ in range(processes):
        pid = os.fork()
        if pid == 0:
            _serving_child(media_sock, text_sock, metrics_endpoint)
        pids.append(pid)
    return pids


def _serving_child(
    media_sock: socket.socket, text_sock: socket.socket, metrics_endpoint: launch.MetricsEndpoint | None
) -> NoReturn:
    """A forked serving process: made like a spawned one (`python -m modelport.process.serving`), then serves."""
    code = 1
    try:
        # Nothing of the CLI's runs at this process's exit; what the serving process registers does.
        atexit._clear()
        if metrics_endpoint is not None and metrics_endpoint.sock is not None:
            metrics_endpoint.sock.close()  # the supervisor's: must not be held open by a serving process
        # As in a fresh interpreter, until the event loop's handlers replace them.
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, SIGNALS)
        serve_inherited(media_sock.fileno(), text_sock.fileno())
        code = 0
    except SystemExit as exc:
        code = 0 if exc.code is None else exc.code if isinstance(exc.code, int) else 1
    except BaseException:
        traceback.print_exc()
    finally:
        try:
            atexit._run_exitfuncs()
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve_inherited(media_fd: int, text_fd: int) -> None:
    """A serving process of `--workers N` (forked by the CLI, or `python -m modelport.process.serving`): it loads the
    settings itself, from the environment the CLI left, and serves both hosts on the sockets it inherited."""
    settings = load_settings()
    media_sock = socket.socket(fileno=media_fd)
    text_sock = socket.socket(fileno=text_fd)
    for sock in (media_sock, text_sock):
        sock.set_inheritable(False)  # not passed on to what this process starts (media task children)
    launch.raise_open_file_limit()
    serving_main(settings, media_sock, text_sock)
