"""`modelport worker`: runs media tasks, the task reconciler and the webhook sender, without HTTP.

Start any number of them (on any machine) against the same PostgreSQL database and file store as the
`serve` processes; with `serve --no-workers` they do all the task work. SIGTERM/SIGINT stop taking new
jobs and let the running ones finish (a task still running when the process dies is taken over by another
worker once its lease runs out).
"""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

from modelport import metrics
from modelport.apps.assemble import build_services
from modelport.settings import Settings


def start_metrics(settings: Settings) -> str | None:
    """This worker's own `/metrics` on `MODELPORT_METRICS_PORT` (0: any free port), if set.

    A worker is one process: it serves its own registry. With `PROMETHEUS_MULTIPROC_DIR` set it serves
    that directory's sum instead (the directory is not wiped: give each worker its own, or leave it unset).
    """
    if settings.metrics_port is None:
        return None
    shared = os.environ.get(metrics.MULTIPROC_ENV)
    host = settings.metrics_host or settings.host
    port = metrics.serve_metrics(host, settings.metrics_port, Path(shared) if shared else None)
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}/metrics"


async def run_worker(settings: Settings, *, ready: asyncio.Event | None = None) -> None:
    services = build_services(settings, task_workers=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await services.start()
    try:
        if ready is not None:
            ready.set()
        await stop.wait()
    finally:
        await services.aclose()
