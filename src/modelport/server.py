"""A serving process of `modelport serve`: both hosts, each on its own port, in one event loop.

The CLI runs the one-off start-up work and binds both listening sockets (`launch.py`), then either serves
in-process (one process: `serving_main` here) or execs the lean `modelport.supervisor`, which starts N serving
processes (`modelport.serving`) that share the sockets (the kernel spreads connections). Every one runs
both apps in one event loop over one shared service container. SIGTERM/SIGINT stop accepting, finish
in-flight requests, then close the services (which drains pending log and ledger writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import math
import resource
import signal
import socket
from collections.abc import Generator

import uvicorn

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
    """Import the apps ahead of `serve_both` (which imports them itself): `serve --workers 1` does it while
    a first start's migration runs in its child process."""
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
