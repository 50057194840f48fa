"""`modelport serve`: both hosts, each on its own port, in one or several worker processes.

The parent binds both listening sockets, runs the one-off start-up work, then either serves in-process
(one worker) or starts N worker processes that share the sockets (the kernel spreads connections).
Every worker runs both apps in one event loop over one shared Runtime. SIGTERM/SIGINT stop accepting,
finish in-flight requests, then run shutdown hooks (which drain pending log and ledger writes).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import multiprocessing.connection
import os
import signal
import socket
from collections.abc import Generator

import uvicorn

from modelport.apps.media import create_media_app
from modelport.apps.text import create_text_app
from modelport.logs import configure_logging
from modelport.runtime import Runtime
from modelport.settings import Settings

log = logging.getLogger("modelport.server")
GRACEFUL_SECONDS = 30


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


def _config(app: object, settings: Settings) -> uvicorn.Config:
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        loop="uvloop",
        http="httptools",
        lifespan="on",
        log_config=None,
        access_log=False,
        timeout_graceful_shutdown=GRACEFUL_SECONDS,
        timeout_keep_alive=75,
        server_header=False,
    )


async def serve_both(settings: Settings, media_sock: socket.socket, text_sock: socket.socket) -> None:
    runtime = Runtime(settings)
    media = _Server(_config(create_media_app(runtime), settings))
    text = _Server(_config(create_text_app(runtime), settings))
    loop = asyncio.get_running_loop()

    def stop() -> None:
        media.should_exit = True
        text.should_exit = True

    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop)
    await asyncio.gather(media.serve([media_sock]), text.serve([text_sock]))


def _worker_main(settings: Settings, media_sock: socket.socket, text_sock: socket.socket) -> None:
    configure_logging(settings.log_level, json_lines=settings.log_json)
    import uvloop

    uvloop.run(serve_both(settings, media_sock, text_sock))


def run(settings: Settings, media_sock: socket.socket, text_sock: socket.socket, workers: int) -> None:
    if workers <= 1:
        _worker_main(settings, media_sock, text_sock)
        return
    Supervisor(settings, media_sock, text_sock, workers).run()


class Supervisor:
    """Keeps N worker processes alive; forwards SIGTERM/SIGINT to them and waits for them to drain."""

    def __init__(self, settings: Settings, media_sock: socket.socket, text_sock: socket.socket, workers: int) -> None:
        self._args = (settings, media_sock, text_sock)
        self._workers = workers
        self._ctx = multiprocessing.get_context("spawn")
        self._children: list[multiprocessing.context.SpawnProcess] = []
        self._stopping = False

    def _spawn(self) -> multiprocessing.context.SpawnProcess:
        child = self._ctx.Process(target=_worker_main, args=self._args, daemon=False)
        child.start()
        return child

    def _forward(self, sig: int, _frame: object) -> None:
        self._stopping = True
        for child in self._children:
            if child.is_alive() and child.pid is not None:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(child.pid, sig)

    def run(self) -> None:
        self._children = [self._spawn() for _ in range(self._workers)]
        signal.signal(signal.SIGTERM, self._forward)
        signal.signal(signal.SIGINT, self._forward)
        while not self._stopping:
            multiprocessing.connection.wait([c.sentinel for c in self._children], timeout=1.0)
            for i, child in enumerate(self._children):
                if not child.is_alive() and not self._stopping:
                    log.error("worker %s exited with %s; starting a new one", child.pid, child.exitcode)
                    self._children[i] = self._spawn()
        for child in self._children:
            child.join()
        failed = [c.exitcode for c in self._children if c.exitcode not in (0, None)]
        if failed:
            log.error("worker processes exited with %s", failed)
