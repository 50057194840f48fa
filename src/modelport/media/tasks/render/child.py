"""`python -m modelport.media.tasks.render.child --fd N --threads T`: the render process of a serving process.

It renders what the serving process sends over the socket pair (fd N) in T threads, as the serving
process did in its own threads before: the models' C code (onnxruntime, Pillow, PyAV) releases the GIL, so
the threads use both cores. It exits when the serving process closes its end: after the idle time
(`tasks.render_idle_seconds`), at shutdown, or when the serving process dies (even by SIGKILL), so
the hundreds of MB a render leaves behind (onnxruntime's arenas, numpy and PyAV buffers) go back to the
system with it.
"""

from __future__ import annotations

import argparse
import os
import signal
import socket
import threading
import traceback
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from modelport.media.tasks.models import InputError, RenderControl, RenderStopped, run_controlled, task_model
from modelport.media.tasks.render import wire


class _Link:
    """The socket to the serving process, shared by the render threads (one message at a time)."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()

    def send(self, message: tuple[Any, ...]) -> None:
        frames = wire.encode(message)
        try:
            with self._lock:
                for frame in frames:
                    self.sock.sendall(frame)
        except OSError:
            os._exit(0)  # the serving process is gone: nothing to render for


class _Renders:
    def __init__(self, link: _Link, threads: int) -> None:
        self._link = link
        self._pool = ThreadPoolExecutor(threads, thread_name_prefix="modelport-render")
        self._controls: dict[int, RenderControl] = {}
        self._lock = threading.Lock()

    def start(self, render_id: int, name: str, params: dict[str, Any], seed: int, inputs: Mapping[str, bytes]) -> None:
        sent = [-1]

        def progress(fraction: float) -> None:
            percent = int(fraction * 100)
            if percent != sent[0]:
                sent[0] = percent
                self._link.send(("progress", render_id, fraction))

        control = RenderControl(on_progress=progress)
        with self._lock:
            self._controls[render_id] = control
        self._pool.submit(self._run, render_id, control, name, params, seed, inputs)

    def stop(self, render_id: int) -> None:
        with self._lock:
            control = self._controls.get(render_id)
        if control is not None:
            control.stop.set()

    def _run(
        self,
        render_id: int,
        control: RenderControl,
        name: str,
        params: dict[str, Any],
        seed: int,
        inputs: Mapping[str, bytes],
    ) -> None:
        try:
            if control.stop.is_set():  # stopped while it waited for a thread
                raise RenderStopped()
            model = task_model(name)
            if model is None:
                raise LookupError(f"no embedded model {name!r}")
            outputs = run_controlled(control, lambda: model.render(params, seed, inputs))
            answer: tuple[Any, ...] = ("done", render_id, outputs)
        except RenderStopped:
            answer = ("stopped", render_id)
        except InputError as exc:
            answer = ("invalid", render_id, str(exc))
        except BaseException as exc:  # the task fails, naming it; this process goes on rendering
            answer = ("failed", render_id, type(exc).__name__, traceback.format_exc())
        finally:
            with self._lock:
                self._controls.pop(render_id, None)
        try:
            self._link.send(answer)
        except Exception as exc:  # an output that does not pickle: the task must still end
            self._link.send(("failed", render_id, type(exc).__name__, traceback.format_exc()))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m modelport.media.tasks.render.child")
    parser.add_argument("--fd", type=int, required=True)
    parser.add_argument("--threads", type=int, required=True)
    args = parser.parse_args(argv)
    # Ctrl-C reaches the whole process group: the serving process decides when this one ends.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    sock = socket.socket(fileno=args.fd)
    renders = _Renders(_Link(sock), args.threads)
    while True:
        try:
            message = wire.receive(sock)
        except OSError:
            message = None
        if message is None:
            break
        if message[0] == "render":
            _, render_id, name, params, seed, inputs = message
            renders.start(render_id, name, params, seed, inputs)
        elif message[0] == "stop":
            renders.stop(message[1])
    # Renders still running have no one to answer to; leave without waiting for them.
    os._exit(0)


if __name__ == "__main__":
    main()
