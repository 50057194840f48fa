"""Runs one task when the queue hands over its id: claim, render off the event loop, store, finish.

Every step is safe to repeat: a duplicate delivery finds the task claimed or ended and does nothing; a run
that loses its lease (the worker stalled and another took over) stops renewing, and its finish loses the
compare-and-swap, so its stored files are removed and nothing is charged twice.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import secrets
import socket
from collections.abc import AsyncIterator, Callable

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport import tracing
from modelport.catalog import CatalogStore
from modelport.clock import now_ms
from modelport.media.files.storage import FileStore
from modelport.media.files.stored import put_new
from modelport.media.tasks import reads
from modelport.media.tasks.events import TaskEvent
from modelport.media.tasks.hosted.client import ProviderFailed
from modelport.media.tasks.hosted.media import HostedMedia
from modelport.media.tasks.inputs import InputUnavailable, read_input
from modelport.media.tasks.live import TaskChanges
from modelport.media.tasks.models import RenderControl, RenderedFile, RenderStopped
from modelport.media.tasks.placement import Embedded, Hosted, placement_of
from modelport.media.tasks.pricing import price_micros
from modelport.media.tasks.render.host import RenderFailed, RenderHost, RenderRefused
from modelport.media.tasks.rows import StoredFile, TaskRow
from modelport.media.tasks.states import TERMINAL, TaskStatus
from modelport.media.tasks.transitions import TaskTransitions
from modelport.net import SafeFetcher
from modelport.settings import TasksSettings

log = logging.getLogger("modelport.media.tasks")


class TaskExecutor:
    def __init__(
        self,
        *,
        engine: AsyncEngine,
        catalog: CatalogStore,
        store: FileStore,
        fetcher: SafeFetcher,
        settings: TasksSettings,
        transitions: TaskTransitions,
        on_terminal: Callable[[], None],
        changes: TaskChanges | None = None,
    ) -> None:
        self._engine = engine
        self._changes = changes
        self._catalog = catalog
        self._store = store
        self._fetcher = fetcher
        self._settings = settings
        self._transitions = transitions
        self._on_terminal = on_terminal
        # Names this process in `claimed_by` (which worker ran a task: logs, scale-out checks).
        self.worker_id = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        # Embedded models render in a child process that exits after idling, so the memory a render
        # leaves behind goes back to the system (see render/host.py).
        self.renders = RenderHost(threads=settings.render_threads, idle_seconds=settings.render_idle_seconds)
        # Tasks of hosted media providers (catalog entries with `upstream`).
        self._hosted = HostedMedia(engine=engine, fetcher=fetcher, store=store, lease_seconds=settings.lease_seconds)

    async def aclose(self) -> None:
        """Stop the render process (a render still running is dropped; its task runs again once its lease
        runs out); close the providers' connections."""
        await self.renders.aclose()
        await self._hosted.aclose()

    @property
    def _lease_ms(self) -> int:
        return int(self._settings.lease_seconds * 1000)

    async def fail(self, task_id: str, code: str, message: str, *, run: int | None = None) -> TaskRow | None:
        ended = await self._transitions.finish_failure(
            task_id, status=TaskStatus.FAILED, code=code, message=message, run=run
        )
        if ended is not None:
            self._on_terminal()
            await self._publish(task_id)
        return ended

    async def _publish(self, task_id: str) -> None:
        """A committed change of the task's row: wake live status streams (Redis; local waiters)."""
        if self._changes is not None:
            await self._changes.publish(task_id)

    async def fail_past_deadline(self, task_id: str) -> None:
        ended = await self._transitions.finish_failure(
            task_id,
            status=TaskStatus.FAILED,
            code="deadline_exceeded",
            message="the task did not finish before its deadline; its price was released",
            past_deadline=True,
        )
        if ended is not None:
            log.warning("task %s failed: deadline passed", task_id)
            self._on_terminal()
            await self._publish(task_id)

    async def handle(self, task_id: str) -> None:
        task = await self._transitions.claim(
            task_id,
            lease_ms=self._lease_ms,
            max_attempts=self._settings.max_attempts,
            worker=self.worker_id,
            announce=True,
        )
        if task is None:
            await self._unclaimable(task_id)
            return
        await self._publish(task_id)
        if tracing.on():
            await self._traced_run(task)
        else:
            await self._run_claimed(task)

    async def _traced_run(self, task: TaskRow) -> None:
        """The run as a span under the trace of the request that created the task (its row keeps it)."""
        span = tracing.start(
            "media task",
            {"modelport.task_id": task.id, "modelport.model": task.model_id, "modelport.attempt": task.attempts},
            parent=tracing.from_traceparent(task.trace_parent),
            kind="CONSUMER",
        )
        error: str | None = None
        try:
            await self._run_claimed(task)
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            tracing.end(span, error=error)

    async def _run_claimed(self, task: TaskRow) -> None:
        task_id = task.id
        run = task.attempts
        control = RenderControl()
        async with self._lease(task, control) as lost:
            try:
                files, cost, metadata = await self._run(task, lost, control)
            except asyncio.CancelledError:
                raise
            except _LeaseLost:
                log.warning("task %s run %d stopped: cancelled, past its deadline or taken over", task_id, run)
                return
            except _TaskError as exc:
                await self.fail(task_id, exc.code, exc.message, run=run)
                return
            except Exception as exc:
                log.exception("task %s run %d crashed", task_id, run)
                await self.fail(task_id, "internal_error", f"the model failed: {type(exc).__name__}", run=run)
                return
        lifetime = task.result_retention_seconds or self._settings.result_retention_seconds
        expires = now_ms() + lifetime * 1000
        try:
            ended = await self._transitions.finish_success(
                task_id, run, files=files, cost_micros=cost, metadata=metadata, result_expires_at_ms=expires
            )
        except BaseException:
            # Rolled back: the task stays `processing` and is run again once its lease runs out.
            await self._discard(files)
            raise
        if ended is None:
            log.warning("task %s run %d finished after losing the task; discarding its files", task_id, run)
            await self._discard(files)
            return
        self._on_terminal()
        await self._publish(task_id)

    async def _unclaimable(self, task_id: str) -> None:
        """The claim failed: the task ended, another worker holds it, or it must fail now."""
        task = await reads.get(self._engine, task_id)
        if task is None or task.status in TERMINAL:
            return
        if task.deadline_ms <= now_ms():
            await self.fail_past_deadline(task_id)
        elif task.attempts >= self._settings.max_attempts and (
            task.status == TaskStatus.QUEUED or (task.lease_until_ms or 0) < now_ms()
        ):
            await self.fail(
                task_id,
                "too_many_attempts",
                f"the task was started {task.attempts} times without finishing (its workers stopped)",
            )

    async def _run(
        self, task: TaskRow, lost: asyncio.Event, control: RenderControl
    ) -> tuple[list[StoredFile], int, dict[str, object]]:
        placement = await placement_of((await self._catalog.get()).media.get(task.model_id))
        if placement is None:
            raise _TaskError("model_unavailable", f"model {task.model_id!r} is no longer available")
        if isinstance(placement, Hosted):
            outputs = await self._hosted_outputs(placement, task, lost, control)
        else:
            outputs = await self._render(placement, task, lost, control)
        if lost.is_set():
            raise _LeaseLost()
        files: list[StoredFile] = []
        try:
            for index, out in enumerate(outputs):
                files.append(await self._store_file(task, index, out))
        except BaseException:
            await self._discard(files)  # no row will ever name these bytes
            raise
        rendered_units = [out.units for out in outputs if out.units is not None]
        units = sum(rendered_units) if rendered_units else placement.units(task.input)
        cost = price_micros(placement.model, units)
        metadata: dict[str, object] = {"seed": task.seed}
        for out in outputs:
            metadata.update(out.metadata)
        if any(f.type == "image" for f in files):
            metadata["image_count"] = sum(1 for f in files if f.type == "image")
        return files, cost, metadata

    async def _render(
        self, placement: Embedded, task: TaskRow, lost: asyncio.Event, control: RenderControl
    ) -> list[RenderedFile]:
        name, task_model = placement.name, placement.spec
        inputs: dict[str, bytes] = {}
        for field in task_model.url_fields:
            value = task.input.get(field)
            if isinstance(value, str):
                try:
                    inputs[field] = await read_input(
                        self._fetcher, self._engine, self._store, task.team_id, field, value
                    )
                except InputUnavailable as exc:
                    raise _TaskError("input_unavailable", exc.message) from exc
        render = asyncio.create_task(self.renders.render(name, task.input, task.seed, inputs, control))
        render.add_done_callback(_retrieve)
        await _until_lost(render, lost)
        if not render.done():
            # Cancelling the call tells the render process to stop it: the model sees the stop at its next
            # progress report (between frames, sentences, images).
            render.cancel()
        if not render.done() or render.cancelled() or lost.is_set():
            control.stop.set()
            raise _LeaseLost()
        try:
            outputs = render.result()
        except RenderStopped as exc:
            raise _LeaseLost() from exc
        except RenderRefused as exc:
            raise _TaskError("invalid_input", str(exc)) from exc
        except RenderFailed as exc:
            log.error("task %s run %d: the model failed: %s", task.id, task.attempts, exc.detail)
            raise _TaskError("internal_error", f"the model failed: {exc.kind}") from exc
        return outputs

    async def _hosted_outputs(
        self, placement: Hosted, task: TaskRow, lost: asyncio.Event, control: RenderControl
    ) -> list[RenderedFile]:
        """The provider's outputs; unlike a render thread, the calls stop at once when the run loses its task
        (lease taken over, deadline passed, cancelled), freeing the provider slot (and a submit-and-poll
        provider with a `cancel_path` gets its cancel call). Its reported progress goes to `control`."""

        def report(fraction: float) -> None:
            control.fraction = fraction

        call = asyncio.create_task(self._hosted.run(placement.model, task, report))
        try:
            await _until_lost(call, lost)
        finally:
            if not call.done():
                call.cancel()
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await call
        if lost.is_set() or call.cancelled():
            raise _LeaseLost()
        try:
            return call.result()
        except ProviderFailed as exc:
            raise _TaskError(exc.code, exc.message) from exc

    async def _discard(self, files: list[StoredFile]) -> None:
        for f in files:
            with contextlib.suppress(Exception):
                await self._store.delete(f.storage_key)

    async def _store_file(self, task: TaskRow, index: int, out: RenderedFile) -> StoredFile:
        async def chunks() -> AsyncIterator[bytes]:
            yield out.data

        stored = await put_new(self._store, chunks())
        return StoredFile(
            file_id=stored.file_id,
            storage_key=stored.storage_key,
            type=out.type,
            mime_type=out.mime_type,
            name=f"{task.id}-{index + 1}.{out.format}",
            size_bytes=stored.size_bytes,
            width=out.width,
            height=out.height,
            format=out.format,
            role=out.role,
        )

    @contextlib.asynccontextmanager
    async def _lease(self, task: TaskRow, control: RenderControl) -> AsyncIterator[asyncio.Event]:
        """While the run goes: renew its lease every third of its length, write the progress the model
        reports (at most every `progress_interval_seconds`), and watch the row; set the event once the run
        no longer owns the task (cancelled, past its deadline, taken over), so the render stops."""
        lost = asyncio.Event()
        run = task.attempts

        async def renew() -> None:
            while True:
                await asyncio.sleep(self._settings.lease_seconds / 3)
                try:
                    owned = await self._transitions.renew(task.id, run, lease_ms=self._lease_ms)
                except Exception:
                    log.exception("task %s: lease renewal failed; retrying", task.id)
                    continue
                if not owned:
                    lost.set()
                    return

        renewer = asyncio.create_task(renew())
        watcher = asyncio.create_task(self._watch(task, control, lost))
        try:
            yield lost
        finally:
            for job in (renewer, watcher):
                job.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job
            if lost.is_set():
                control.stop.set()

    async def _watch(self, task: TaskRow, control: RenderControl, lost: asyncio.Event) -> None:
        """Every `progress_interval_seconds`: write a changed progress (a lost compare-and-swap means the run
        lost the task), else read the row's status; fail the task once its deadline passed."""
        interval = self._settings.progress_interval_seconds
        chosen = task.webhook_url is not None and TaskEvent.PROGRESS in (task.webhook_events or ())
        written: int | None = None
        last_hook = 0.0
        loop = asyncio.get_running_loop()
        while not lost.is_set():
            await asyncio.sleep(interval)
            try:
                if task.deadline_ms <= now_ms():
                    await self.fail_past_deadline(task.id)
                    lost.set()
                    return
                fraction = control.fraction
                percent = None if fraction is None else min(99, int(fraction * 100))
                if percent is not None and percent != written:
                    hook = chosen and loop.time() - last_hook >= self._settings.progress_webhook_seconds
                    if not await self._transitions.set_progress(task.id, task.attempts, percent, announce=hook):
                        lost.set()
                        return
                    written = percent
                    await self._publish(task.id)
                    if hook:
                        last_hook = loop.time()
                        self._on_terminal()  # wakes the webhook sender
                else:
                    state = await reads.run_state(self._engine, task.id)
                    if state != (TaskStatus.PROCESSING, task.attempts):
                        lost.set()
                        return
            except Exception:
                log.exception("task %s: progress watch failed; retrying", task.id)


async def _until_lost(work: asyncio.Task[list[RenderedFile]], lost: asyncio.Event) -> None:
    """Wait until `work` is done or the run loses its task (`lost`), whichever comes first."""
    watch = asyncio.create_task(lost.wait())
    try:
        await asyncio.wait({work, watch}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        watch.cancel()


def _retrieve(render: asyncio.Task[list[RenderedFile]]) -> None:
    """A render abandoned on a stop may end with an exception nobody awaits: mark it seen."""
    if not render.cancelled():
        render.exception()


class _LeaseLost(Exception):
    pass


class _TaskError(Exception):
    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
