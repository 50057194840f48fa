"""The outbox carries rows that report no task (SQLite, the real fetcher, a local receiver): `enqueue`'s
rules, operator rows (no team) in the due query, and the sender's pluggable secret lookup."""

from __future__ import annotations

import secrets
from base64 import b64encode
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncEngine
from standardwebhooks.webhooks import Webhook

from modelport.accounts import service as accounts
from modelport.clock import now_ms
from modelport.net import SafeFetcher
from modelport.settings import NetSettings, WebhookSettings
from modelport.webhooks import outbox
from modelport.webhooks.outbox import enqueue, retry_window_ms
from modelport.webhooks.secret_box import secret_box
from modelport.webhooks.sender import SecretLookup, WebhookSender, team_secret_lookup
from modelport.webhooks.states import DeliveryStatus
from modelport.webhooks.tables import webhook_attempts
from tests.integration.tasks.helpers import WebhookReceiver
from tests.support.databases import migrated_engine

BOX = secret_box("outbox-sources-test-secret-key")
OPERATOR_SECRET = "whsec_" + b64encode(secrets.token_bytes(24)).decode()


@pytest.fixture
async def engine(tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with migrated_engine("sqlite", tmp_path) as eng:
        yield eng


@asynccontextmanager
async def _sender(
    engine: AsyncEngine, receiver: WebhookReceiver, lookup: SecretLookup | None = None
) -> AsyncIterator[WebhookSender]:
    settings = WebhookSettings.model_validate(
        {"schedule_seconds": [0, 0.2], "jitter_fraction": 0, "timeout_seconds": 2}
    )
    fetcher = SafeFetcher(NetSettings(allow_hosts=receiver.host))
    try:
        yield WebhookSender(engine, fetcher, settings, BOX, secrets=lookup)
    finally:
        await fetcher.aclose()  # its aiohttp session, or it is reported unclosed in a later test


async def _operator_row(engine: AsyncEngine, url: str) -> str:
    async with engine.begin() as conn:
        return await enqueue(
            conn,
            team_id=None,
            url=url,
            event_type="deployment.down",
            payload='{"type":"deployment.down"}',
            source="operator",
        )


async def test_enqueue_checks_what_each_source_needs(engine: AsyncEngine) -> None:
    async with engine.begin() as conn:
        with pytest.raises(ValueError, match="task_id"):
            await enqueue(
                conn, team_id="team_x", url="https://x", event_type="task.succeeded", payload="{}", source="task"
            )
        with pytest.raises(ValueError, match="operator"):
            await enqueue(
                conn, team_id=None, url="https://x", event_type="balance.low", payload="{}", source="notification"
            )
        with pytest.raises(ValueError, match="operator"):
            await enqueue(conn, team_id="team_x", url="https://x", event_type="x", payload="{}", source="operator")


async def test_a_row_without_a_task_gives_up_at_the_schedules_end(engine: AsyncEngine) -> None:
    before = now_ms()
    delivery_id = await _operator_row(engine, "https://ops.example.com/hook")
    claimed = await outbox.claim(engine, delivery_id, claim_ms=1000)
    assert claimed is not None and claimed.source == "operator" and claimed.team_id is None and claimed.task_id is None
    window = retry_window_ms(WebhookSettings())
    assert before + window <= claimed.give_up_at_ms <= now_ms() + window


async def test_operator_rows_stay_due_when_teams_are_excluded(engine: AsyncEngine) -> None:
    team = await accounts.create_team(engine, "due-" + secrets.token_hex(3), tier="free")
    delivery_id = await _operator_row(engine, "https://ops.example.com/hook")
    async with engine.begin() as conn:
        team_row = await enqueue(
            conn,
            team_id=team.id,
            url="https://x.example.com",
            event_type="notification.test",
            payload="{}",
            source="notification",
        )
    assert sorted(await outbox.due(engine, limit=10)) == sorted([(delivery_id, None), (team_row, team.id)])
    assert await outbox.due(engine, limit=10, exclude_teams=[team.id]) == [(delivery_id, None)]
    assert await outbox.due(engine, limit=10, exclude_teams=[None]) == [(team_row, team.id)]


async def test_without_an_operator_lookup_an_operator_row_fails_without_a_request(engine: AsyncEngine) -> None:
    with WebhookReceiver().running() as receiver:
        delivery_id = await _operator_row(engine, receiver.url())
        claimed = await outbox.claim(engine, delivery_id, claim_ms=5000)
        assert claimed is not None
        async with _sender(engine, receiver) as sender:
            await sender.deliver(claimed)
        assert receiver.received == []
    async with engine.connect() as conn:
        (attempt,) = (
            await conn.execute(select(webhook_attempts).where(webhook_attempts.c.delivery_id == delivery_id))
        ).all()
    assert attempt.status_code is None and attempt.outcome == "failed"
    assert attempt.error == "no secret configured for operator alerts"


async def test_a_pluggable_lookup_signs_operator_rows_and_keeps_team_rows_on_the_teams_secret(
    engine: AsyncEngine,
) -> None:
    team = await accounts.create_team(engine, "sig-" + secrets.token_hex(3), tier="free")
    teams = team_secret_lookup(engine, BOX)

    async def lookup(delivery: outbox.Delivery, at_ms: int) -> list[str]:
        return [OPERATOR_SECRET] if delivery.team_id is None else await teams(delivery, at_ms)

    with WebhookReceiver().running() as receiver:
        operator_id = await _operator_row(engine, receiver.url())
        async with engine.begin() as conn:
            team_id = await enqueue(
                conn,
                team_id=team.id,
                url=receiver.url(),
                event_type="notification.test",
                payload='{"type":"notification.test"}',
                source="notification",
            )
        async with _sender(engine, receiver, lookup) as sender:
            for delivery_id in (operator_id, team_id):
                claimed = await outbox.claim(engine, delivery_id, claim_ms=5000)
                assert claimed is not None
                await sender.deliver(claimed)
        got = {r.headers["webhook-id"]: r for r in receiver.received}
    assert Webhook(OPERATOR_SECRET).verify(got[operator_id].body, got[operator_id].headers)["type"] == "deployment.down"
    team_secret = (
        await teams(
            outbox.Delivery(team_id, "notification", None, team.id, "", "", "", DeliveryStatus.PENDING, 0, 0, 0, 0),
            now_ms(),
        )
    )[0]
    assert Webhook(team_secret).verify(got[team_id].body, got[team_id].headers)["type"] == "notification.test"
    listed = await outbox.for_team(engine, team.id, "notification", limit=10)
    assert [(d["webhook_id"], d["status"], len(d["attempts"])) for d in listed] == [(team_id, "delivered", 1)]
