"""The parent of `serve --workers N` once start-up is done: keeps N serving processes alive.

`modelport serve` (`cli/serving.py`) loads the settings, runs the one-off start-up work, binds the sockets and prints
the banner, forks the serving processes (which start with the apps already imported), then execs
`python -m modelport.process.supervisor` in the same process (same PID, the listening sockets inherited, the forked
serving processes still its children: it adopts them). The CLI's modules (pydantic, SQLAlchemy, the apps:
~100 MiB) are gone with the old image, and this module uses the standard library only (~13 MiB;
prometheus-client adds ~11 MiB when `/metrics` is on). A serving process it starts itself (one the CLI could
not fork, or a restart) is `python -m modelport.process.serving` with the sockets' descriptors on its command line;
it loads the settings itself from the same environment.

The supervisor restarts a serving process that dies (sweeping its live gauges from the metrics directory), and
forwards SIGTERM/SIGINT to the serving processes, which drain and exit; then it exits too.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import signal
import socket
import sys
import time
from pathlib import Path

from modelport.logs import configure_logging

log = logging.getLogger("modelport.server")
_SIGNALS = (signal.SIGTERM, signal.SIGINT)
# A serving process dying sooner than this after its start is restarted only after this long, so one that
# cannot start (a database gone, a broken setting) is retried once a second rather than in a tight loop.
RESTART_PAUSE = 1.0


class Supervisor:
    def __init__(
        self,
        serving_argv: list[str],
        processes: int,
        sockets: list[socket.socket],
        metrics_dir: Path | None,
        adopted: list[int] | None = None,
    ):
        self._argv = serving_argv
        self._processes = processes
        self._sockets = sockets
        self._metrics_dir = metrics_dir
        # pid: start time. `adopted`: serving processes the CLI forked before the exec (our children).
        self._children: dict[int, float] = dict.fromkeys(adopted or (), time.monotonic())
        self._stopping = False
        self._failed: list[int] = []

    def _spawn(self) -> None:
        # Signals are blocked while a serving process starts, so one arriving now is forwarded to it too; the child
        # starts with an empty signal mask (setsigmask) and default handlers.
        signal.pthread_sigmask(signal.SIG_BLOCK, _SIGNALS)
        try:
            pid = os.posix_spawn(self._argv[0], self._argv, os.environ, setsigmask=(), setsigdef=_SIGNALS)
            self._children[pid] = time.monotonic()
        finally:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)

    def _forward(self, sig: int, _frame: object) -> None:
        self._stopping = True
        for pid in self._children:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        # Our copies of the listening sockets: once the serving processes close theirs after draining, new
        # connections are refused at once instead of waiting in a backlog nobody accepts from.
        for sock in self._sockets:
            sock.close()

    def run(self) -> int:
        for sig in _SIGNALS:
            signal.signal(sig, self._forward)
        # The CLI blocked them before forking (the mask survives the exec): one that arrived since is forwarded now.
        signal.pthread_sigmask(signal.SIG_UNBLOCK, _SIGNALS)
        for _ in range(self._processes - len(self._children)):
            self._spawn()
        while self._children:
            try:
                pid, status = os.wait()  # retried after a signal's handler has run (PEP 475)
            except ChildProcessError:
                break
            started = self._children.pop(pid, None)
            if started is None:
                continue
            self._sweep(pid)
            code = os.waitstatus_to_exitcode(status)
            if self._stopping:
                if code != 0:
                    self._failed.append(code)
                continue
            log.error("serving process %s exited with %s; starting a new one", pid, code)
            if time.monotonic() - started < RESTART_PAUSE:
                time.sleep(RESTART_PAUSE)
            if not self._stopping:
                self._spawn()
        if self._failed:
            log.error("serving processes exited with %s", self._failed)
        return 0

    def _sweep(self, pid: int) -> None:
        """A dead serving process's live gauges leave the sums (its counters stay: totals never go down)."""
        if self._metrics_dir is not None:
            from prometheus_client import multiprocess

            multiprocess.mark_process_dead(pid, str(self._metrics_dir))  # type: ignore[no-untyped-call]


def serve_metrics(sock: socket.socket, directory: Path) -> None:
    """`/metrics` on the socket the CLI bound (its port is in the banner), summed over the serving processes' files.
    Its modules (http.server with email, prometheus-client) are imported only when metrics are on."""
    import http.server
    import threading

    from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, generate_latest, multiprocess

    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry, path=str(directory))  # type: ignore[no-untyped-call]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = generate_latest(registry)
            self.send_response(200)
            self.send_header("Content-Type", CONTENT_TYPE_LATEST)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = http.server.ThreadingHTTPServer(sock.getsockname()[:2], Handler, bind_and_activate=False)
    server.socket.close()
    server.socket = sock  # already bound and listening
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="metrics", daemon=True).start()


def _adopt(fd: int) -> socket.socket:
    return socket.socket(fileno=fd)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m modelport.process.supervisor")
    parser.add_argument("--workers", dest="processes", type=int, required=True)  # serving processes
    parser.add_argument("--adopt", type=int, action="append", default=[], help="a serving process forked by the CLI")
    parser.add_argument("--socket-fd", type=int, action="append", default=[], help="inherited by the serving processes")
    parser.add_argument("--metrics-fd", type=int, default=None)
    parser.add_argument("--metrics-dir", type=Path, default=None)
    parser.add_argument("--log-level", default="INFO")
    parser.add_argument("--log-json", choices=("auto", "true", "false"), default="auto")
    parser.add_argument("serving", nargs="+", help="a serving process's command line (after --)")
    args = parser.parse_args(argv)
    configure_logging(args.log_level, json_lines=None if args.log_json == "auto" else args.log_json == "true")
    if args.metrics_fd is not None and args.metrics_dir is not None:
        metrics_sock = _adopt(args.metrics_fd)
        metrics_sock.set_inheritable(False)  # the serving processes must not hold the metrics port open
        serve_metrics(metrics_sock, args.metrics_dir)
    sockets = [_adopt(fd) for fd in args.socket_fd]
    sys.exit(Supervisor(args.serving, args.processes, sockets, args.metrics_dir, args.adopt).run())


if __name__ == "__main__":
    main()
