"""`modelport_media_task_queue_age_seconds`: the reconciler sets it to the age of the oldest queued task,
and back to 0 once none waits (SQLite, the real reconciler pass and queue)."""

from __future__ import annotations

import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest
from prometheus_client import REGISTRY

from modelport import metrics
from modelport.accounts import service as accounts
from modelport.billing.ledger import topup
from modelport.clock import now_ms
from modelport.media.tasks.executor import TaskExecutor
from modelport.media.tasks.rows import NewTask
from modelport.media.tasks.states import TaskStatus
from modelport.media.tasks.workers import Reconciler
from modelport.queue import build_queue
from modelport.settings import TasksSettings
from tests.support.databases import migrated_engine
from tests.support.task_rows import task_transitions


@pytest.fixture
def metrics_on() -> Iterator[None]:
    metrics.enable(True)
    try:
        yield
    finally:
        metrics.enable(False)


def queue_age() -> float | None:
    return REGISTRY.get_sample_value("modelport_media_task_queue_age_seconds")


async def test_queue_age_follows_the_oldest_queued_task(tmp_path: Path, metrics_on: None) -> None:
    async with migrated_engine("sqlite", tmp_path) as engine:
        queue = build_queue(str(engine.url), heartbeat_seconds=30)
        # No task is past its deadline here, so the executor (which fails those) is never called.
        reconciler = Reconciler(engine, queue, cast(TaskExecutor, None), TasksSettings())
        try:
            await reconciler.pass_once()
            assert queue_age() == 0
            team = await accounts.create_team(engine, "age-" + secrets.token_hex(3), tier="free")
            await topup(engine, team.id, 10_000)
            created = now_ms() - 90_000  # queued a minute and a half ago
            task = NewTask(
                id="task_" + secrets.token_hex(16),
                team_id=team.id,
                model_id="local/sketch-image",
                input={"prompt": "x"},
                seed=1,
                price_micros=100,
                webhook_url=None,
                deadline_ms=now_ms() + 600_000,
                created_at_ms=created,
            )
            await task_transitions(engine).create(task, max_unfinished=5)
            await reconciler.pass_once()
            age = queue_age()
            assert age is not None and 90 <= age < 200

            ended = await task_transitions(engine).finish_failure(
                task.id, status=TaskStatus.CANCELLED, code="cancelled", message="x"
            )
            assert ended is not None
            await reconciler.pass_once()
            assert queue_age() == 0
        finally:
            await queue.aclose()
