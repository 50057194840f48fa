"""`modelport worker`: runs media tasks, the task reconciler and the webhook sender, without HTTP.

Start any number of them (on any machine) against the same PostgreSQL database and file store as the
`serve` processes; with `serve --no-workers` they do all the task work. SIGTERM/SIGINT stop taking new
jobs and let the running ones finish (a task still running when the process dies is taken over by another
worker once its lease runs out).
"""

from __future__ import annotations

import asyncio
import signal

from modelport.apps.assemble import build_services
from modelport.settings import Settings


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
