"""The serving process's side of its render process: start it on the first render, hand it renders, relay
their progress and stops, and close it once it has idled `tasks.render_idle_seconds`.

A render leaves hundreds of MB in the process that ran it (onnxruntime's arenas, numpy and PyAV buffers:
a serving process went from ~100 to ~450 MiB after two images and never gave them back). In a child that
exits after idling, that memory goes back to the system, and the serving process stays at its size
between renders. The price: the first render after an idle period waits for the child to start and load
its model (about a second), as the first render of a process always did.

A render that raises fails its task with the error's type, as before; the render process dying during a
render (killed, out of memory, a crash in native code) fails the renders it held, and the next render
starts a new one.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import signal
import site
import socket
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from modelport.media.tasks.models import RenderControl, RenderedFile, RenderStopped
from modelport.media.tasks.render import wire

log = logging.getLogger("modelport.media.tasks")
# How long a render process may take to exit once its socket is closed before it is killed.
EXIT_WAIT_SECONDS = 5.0
# StreamReader buffer: outputs are MBs; reading them in 64 KiB steps (the default) costs loop turns.
READ_LIMIT = 1 << 20


class RenderFailed(Exception):
    """The render raised in the render process (`kind` names the exception), or the process ended."""

    def __init__(self, kind: str, detail: str) -> None:
        super().__init__(f"{kind}\n{detail}")
        self.kind = kind
        self.detail = detail


class RenderRefused(Exception):
    """The model refused the task's input (`InputError` in the render process)."""


@dataclass(eq=False)
class _Child:
    process: subprocess.Popen[bytes]
    reader: asyncio.StreamReader
    writer: asyncio.StreamWriter
    # Renders sent and not yet answered; a render whose task stopped waiting stays until its answer.
    pending: dict[int, tuple[asyncio.Future[list[RenderedFile]], RenderControl]] = field(default_factory=dict)
    idle: asyncio.TimerHandle | None = None
    closing: bool = False  # closed on purpose (idle, shutdown): its end is not a crash
    ended: bool = False

    def send(self, message: tuple[Any, ...]) -> None:
        self.writer.writelines(wire.encode(message))


class RenderHost:
    def __init__(self, *, threads: int, idle_seconds: float) -> None:
        self._threads = threads
        self._idle_seconds = idle_seconds
        self._child: _Child | None = None
        self._starting = asyncio.Lock()
        self._ids = itertools.count(1)
        self._closed = False
        self._readers: set[asyncio.Task[None]] = set()

    @property
    def pid(self) -> int | None:
        """The running render process's id (None between renders, once it has idled out)."""
        return None if self._child is None else self._child.process.pid

    async def render(
        self, runner: str, params: dict[str, Any], seed: int, inputs: Mapping[str, bytes], control: RenderControl
    ) -> list[RenderedFile]:
        """The outputs of `runner` for the task; cancelling the call tells the render to stop (at its next
        progress report). Raises `RenderRefused`, `RenderFailed` or, after `aclose`, `RenderStopped`."""
        if self._closed:
            raise RenderStopped()
        child = await self._running()
        render_id = next(self._ids)
        future: asyncio.Future[list[RenderedFile]] = asyncio.get_running_loop().create_future()
        child.pending[render_id] = (future, control)
        if child.idle is not None:
            child.idle.cancel()
            child.idle = None
        try:
            try:
                child.send(("render", render_id, runner, params, seed, dict(inputs)))
                await child.writer.drain()
            except (ConnectionError, OSError):
                pass  # the process ended: its reader fails this render with the exit status
            return await future
        except asyncio.CancelledError:
            if render_id in child.pending and not child.ended:
                with contextlib.suppress(ConnectionError, OSError, RuntimeError):
                    child.send(("stop", render_id))
            raise

    async def _running(self) -> _Child:
        async with self._starting:
            if self._child is None:
                self._child = await self._start()
            return self._child

    async def _start(self) -> _Child:
        ours, theirs = socket.socketpair()
        try:
            argv = [sys.executable, "-m", "modelport.media.tasks.render.child"]
            argv += ["--fd", str(theirs.fileno()), "--threads", str(self._threads)]
            # Blocks for the vfork and exec only (milliseconds); in a thread, a cancelled start would
            # close the child's end of the socket while the thread still passes it on.
            process = subprocess.Popen(  # noqa: ASYNC220
                argv, pass_fds=(theirs.fileno(),), stdin=subprocess.DEVNULL, env=_child_env()
            )
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
        reader, writer = await asyncio.open_unix_connection(sock=ours, limit=READ_LIMIT)
        child = _Child(process, reader, writer)
        reading = asyncio.create_task(self._read(child), name=f"render process {process.pid}")
        self._readers.add(reading)
        reading.add_done_callback(self._readers.discard)
        log.info("render process %s started", process.pid)
        return child

    async def _read(self, child: _Child) -> None:
        try:
            while True:
                (size,) = wire.HEADER.unpack(await child.reader.readexactly(wire.HEADER.size))
                self._answer(child, wire.decode(await child.reader.readexactly(size)))
        except (asyncio.IncompleteReadError, ConnectionError, OSError):
            pass  # the process closed its end: it exited (or was told to)
        except Exception:
            log.exception("render process %s sent an unreadable message; stopping it", child.process.pid)
        await self._ended(child)

    def _answer(self, child: _Child, message: tuple[Any, ...]) -> None:
        kind, render_id = message[0], message[1]
        if kind == "progress":
            entry = child.pending.get(render_id)
            if entry is not None:
                entry[1].fraction = float(message[2])
            return
        future, _ = child.pending.pop(render_id, (None, None))
        if future is not None and not future.done():
            if kind == "done":
                future.set_result(message[2])
            elif kind == "stopped":
                future.set_exception(RenderStopped())
            elif kind == "invalid":
                future.set_exception(RenderRefused(message[2]))
            else:
                future.set_exception(RenderFailed(message[2], message[3]))
        if not child.pending and not child.closing:
            child.idle = asyncio.get_running_loop().call_later(self._idle_seconds, self._retire, child)

    def _retire(self, child: _Child) -> None:
        """Idle long enough: close the socket; the process exits on seeing it closed."""
        if child.pending or child.closing:
            return
        log.info("render process %s idle for %.3g s; closing it", child.process.pid, self._idle_seconds)
        self._detach(child)
        child.writer.close()

    def _detach(self, child: _Child) -> None:
        child.closing = True
        if child.idle is not None:
            child.idle.cancel()
            child.idle = None
        if self._child is child:
            self._child = None

    async def _ended(self, child: _Child) -> None:
        child.ended = True
        expected = child.closing
        if self._child is child:
            self._child = None  # the next render starts a new process
        child.writer.close()
        code = await _exit_code(child.process)
        if expected and code == 0:
            log.info("render process %s exited", child.process.pid)
        else:
            log.error("render process %s ended: %s", child.process.pid, _describe(code))
        failure = RenderFailed(f"the render process ended ({_describe(code)})", f"render process {child.process.pid}")
        for future, _ in child.pending.values():
            if not future.done():
                future.set_exception(RenderStopped() if expected else failure)
        child.pending.clear()

    async def aclose(self) -> None:
        """Shutdown: the render process exits; renders still running are stopped (their tasks are run
        again once their lease runs out, as after any stopped worker)."""
        self._closed = True
        child = self._child
        if child is not None:
            self._detach(child)
            child.writer.close()
        for reading in list(self._readers):
            with contextlib.suppress(Exception):
                await reading


def _child_env() -> dict[str, str]:
    """The render process imports this same `modelport` (a launcher may have put another checkout first
    on sys.path): the directory this package came from goes first on its PYTHONPATH."""
    env = dict(os.environ)
    here = str(Path(__file__).resolve().parents[4])
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if here not in paths and here not in site.getsitepackages():
        env["PYTHONPATH"] = os.pathsep.join([here, *paths])
    return env


async def _exit_code(process: subprocess.Popen[bytes]) -> int:
    try:
        return await asyncio.to_thread(process.wait, EXIT_WAIT_SECONDS)
    except subprocess.TimeoutExpired:
        log.warning("render process %s did not exit; killing it", process.pid)
        process.kill()
        return await asyncio.to_thread(process.wait)


def _describe(code: int) -> str:
    if code < 0:
        with contextlib.suppress(ValueError):
            return f"killed by {signal.Signals(-code).name}"
    return f"exit status {code}"
