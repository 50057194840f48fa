"""Team notifications: balance and key events, detected where the money moves and sent once.

Each event is enqueued in the webhook outbox (`webhooks.outbox`, source `notification`) in the transaction
that makes it true, behind a compare-and-set that only one transaction in any process can win:

- `balance.low`: after a settlement, the team's balance (available + held for requests in flight, so the
  holds of running requests do not make it flap) is below `balance_below_usd` and the team's
  `balance_low_sent` flag was clear; the flag is cleared again when a top-up lifts the balance to the
  threshold or above (or the threshold changes).
- `balance.exhausted`: the first 402 for insufficient balance since the last top-up (`exhausted_sent`).
- `key.spend_threshold`: after a settlement, a key's spend in its period reached a configured percent of its
  limit; a `notification_marks` row per (key, period, percent) makes it once.
- `key.expiring`: a key expires within `key_expiry_days`; a mark per (key, expiry) makes it once. Found by
  `expiring_keys`, which the task reconciler runs periodically.

Teams without settings cost the settlement one indexed lookup per transaction (a batch of many
settlements), nothing more.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Iterable
from typing import Any

from sqlalchemy import BigInteger, and_, cast, exists, literal, or_, select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import notifications
from modelport.accounts.tables import api_keys, team_notifications, teams
from modelport.billing.tables import key_spend, notification_marks
from modelport.clock import now_ms
from modelport.errors import InvalidParameters, RequestLimited
from modelport.money import display_usd
from modelport.storage import sqlite_direct
from modelport.webhooks import outbox
from modelport.webhooks.outbox import enqueue
from modelport.webhooks.registry import event_body, event_types

log = logging.getLogger("modelport.notifications")
DAY_MS = 24 * 3600 * 1000
# How long a `notification.test` event is tried (the schedule's attempts that fall within it).
TEST_WINDOW_MS = 60_000
TEST_RETRY_AFTER_SECONDS = 5
EVENT_TYPES = event_types("notification")  # their rows in webhooks/registry.py


def _usd(micros: int) -> str:
    return str(display_usd(micros))


def payload(event_type: str, data: dict[str, Any], at_ms: int | None = None) -> str:
    """The Standard Webhooks body, shaped like a task's: `type`, `timestamp` (ISO 8601), `data`."""
    return event_body(event_type, data, now_ms() if at_ms is None else at_ms)


async def _send(conn: AsyncConnection, team_id: str, url: str, event_type: str, data: dict[str, Any]) -> str:
    return await enqueue(
        conn,
        team_id=team_id,
        url=url,
        event_type=event_type,
        payload=payload(event_type, {"team_id": team_id, **data}),
        source="notification",
    )


def _funds(balance: int, frozen: int) -> dict[str, str]:
    return {"balance_usd": _usd(balance + frozen), "available_usd": _usd(balance), "frozen_usd": _usd(frozen)}


# -- where the money moves ---------------------------------------------------------------------------------


async def after_settlement(
    conn: AsyncConnection, team_ids: Iterable[str], key_periods: Iterable[tuple[str, str, int]] = ()
) -> None:
    """Call in the settlement's transaction, after the team rows (and key rows) moved. `key_periods`:
    (team id, key id, period start) of the keys with a spend limit the settlement charged."""
    wanted = sorted(set(team_ids))
    if not wanted:
        return
    n, t = team_notifications.c, teams.c
    rows = (
        await conn.execute(
            select(
                n.team_id,
                n.url,
                n.balance_below_micros,
                n.key_spend_percent,
                n.balance_low_sent,
                t.balance_micros,
                t.frozen_micros,
            )
            .join(teams, t.id == n.team_id)
            .where(n.team_id.in_(wanted), n.url.is_not(None))
        )
    ).all()
    if not rows:
        return
    keyed: dict[str, tuple[str, tuple[int, ...]]] = {}
    for row in rows:
        if row.balance_below_micros is not None and not row.balance_low_sent:
            funds = int(row.balance_micros) + int(row.frozen_micros)
            if funds < int(row.balance_below_micros):
                await _balance_low(conn, row.team_id, row.url, int(row.balance_below_micros), row)
        if row.key_spend_percent:
            keyed[row.team_id] = (row.url, tuple(int(p) for p in row.key_spend_percent.split(",")))
    moves = sorted({(key_id, period) for team_id, key_id, period in key_periods if team_id in keyed})
    if moves:
        await _key_thresholds(conn, moves, keyed)


def sqlite_would_send(conn: sqlite3.Connection, team_ids: Iterable[str], key_team_ids: Iterable[str]) -> bool:
    """Whether `after_settlement` (same arguments: the teams charged, and the teams of the charged keys with a
    spend limit) could send anything, read in a plain SQLite connection's transaction after the same moves
    (`settlement`'s direct SQLite batch): only then does it need the engine's path."""
    wanted = sorted(set(team_ids))
    if not wanted:
        return False
    keyed = set(key_team_ids)
    rows = conn.execute(
        "SELECT n.team_id, n.balance_below_micros, n.key_spend_percent, n.balance_low_sent, t.balance_micros,"
        " t.frozen_micros FROM team_notifications n JOIN teams t ON t.id = n.team_id"
        f" WHERE n.team_id {sqlite_direct.IN_JSON_LIST} AND n.url IS NOT NULL",
        (sqlite_direct.json_list(wanted),),
    ).fetchall()
    for team_id, below, percents, low_sent, balance, frozen in rows:
        if below is not None and not low_sent and int(balance) + int(frozen) < int(below):
            return True
        if percents and team_id in keyed:
            return True
    return False


async def _balance_low(conn: AsyncConnection, team_id: str, url: str, threshold: int, row: Any) -> None:
    if await notifications.claim_balance_low(conn, team_id):
        data = {**_funds(int(row.balance_micros), int(row.frozen_micros)), "threshold_usd": _usd(threshold)}
        await _send(conn, team_id, url, "balance.low", data)


async def _key_thresholds(
    conn: AsyncConnection, moves: list[tuple[str, int]], keyed: dict[str, tuple[str, tuple[int, ...]]]
) -> None:
    s, k, m = key_spend.c, api_keys.c, notification_marks.c
    # (key, period) pairs as a short OR list: a settlement batch charges few keys with a spend limit.
    pairs = or_(*[and_(s.key_id == key_id, s.period_start_ms == period) for key_id, period in moves])
    found = (
        await conn.execute(
            select(k.id, k.team_id, k.name, k.prefix, k.spend_limit_micros, k.spend_limit_period)
            .add_columns(s.period_start_ms, s.spent_micros)
            .select_from(key_spend)
            .join(api_keys, k.id == s.key_id)
            .where(pairs, k.spend_limit_micros > 0)
        )
    ).all()
    for row in found:
        url, percents = keyed[row.team_id]
        limit, spent = int(row.spend_limit_micros), int(row.spent_micros)
        reached = [p for p in percents if spent * 100 >= limit * p]
        if not reached:
            continue
        sent = set(
            (
                await conn.execute(
                    select(m.percent).where(
                        m.key_id == row.id, m.event == "key.spend_threshold", m.period_ms == row.period_start_ms
                    )
                )
            ).scalars()
        )
        for percent in reached:
            if percent in sent or not await _mark(
                conn, row.id, "key.spend_threshold", int(row.period_start_ms), percent
            ):
                continue
            data = {
                "key_id": row.id,
                "key_name": row.name,
                "key_prefix": row.prefix,
                "percent": percent,
                "period": row.spend_limit_period or "total",
                "period_start": int(row.period_start_ms) // 1000,
                "spent_usd": _usd(spent),
                "limit_usd": _usd(limit),
            }
            await _send(conn, row.team_id, url, "key.spend_threshold", data)


async def _mark(conn: AsyncConnection, key_id: str, event: str, period_ms: int, percent: int) -> bool:
    """Insert the mark of a key event; False when it exists already (another transaction sent it)."""
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    inserted = await conn.execute(
        dialect.insert(notification_marks)
        .values(key_id=key_id, event=event, period_ms=period_ms, percent=percent, created_at_ms=now_ms())
        .on_conflict_do_nothing(index_elements=["key_id", "event", "period_ms", "percent"])
        .returning(notification_marks.c.key_id)
    )
    return inserted.first() is not None


async def after_topup(conn: AsyncConnection, team_id: str, balance_micros: int, frozen_micros: int) -> None:
    """Call in the top-up's transaction: arm `balance.exhausted` again, and `balance.low` if the balance is
    now at or above the threshold."""
    await notifications.rearm_after_topup(conn, team_id, balance_micros + frozen_micros)


async def balance_exhausted(engine: AsyncEngine, team_id: str) -> None:
    """A request was refused with 402 for the team's balance: send `balance.exhausted` if this is the first
    since the last top-up. Never raises (the refusal goes out whatever happens here)."""
    try:
        async with engine.begin() as conn:
            url = await notifications.claim_exhausted(conn, team_id)
            if url is None:
                return
            funds = (
                await conn.execute(select(teams.c.balance_micros, teams.c.frozen_micros).where(teams.c.id == team_id))
            ).one()
            await _send(conn, team_id, url, "balance.exhausted", _funds(int(funds[0]), int(funds[1])))
    except Exception:
        log.exception("team %s: could not record balance.exhausted", team_id)


async def send_test(engine: AsyncEngine, team_id: str) -> str:
    """Enqueue a `notification.test` event to the team's URL; its delivery id. 400 when no URL is set, 429
    while the team's previous test is still pending (one in flight per team, whichever process took it).

    A test is tried for `TEST_WINDOW_MS` at most, not the whole retry schedule (about 28 hours): it answers
    "does my receiver work now", and a failing receiver must not keep the next test out for a day."""
    async with engine.begin() as conn:
        # The settings row's lock (PostgreSQL; SQLite's BEGIN IMMEDIATE locks the database) orders concurrent
        # tests of the team, so the pending check and the insert cannot interleave.
        query = select(team_notifications.c.url).where(team_notifications.c.team_id == team_id)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        url = (await conn.execute(query)).scalar()
        if url is None:
            raise InvalidParameters("set a notification url first (PUT /api/v1/notifications)", param="url")
        now = now_ms()
        if await outbox.is_pending(conn, "notification", team_id=team_id, event_type="notification.test", at_ms=now):
            raise RequestLimited(
                "the team's previous notification test is still being delivered; send another once it has"
                " ended (GET /api/v1/notifications/deliveries)",
                headers={"Retry-After": str(TEST_RETRY_AFTER_SECONDS)},
            )
        data = {"team_id": team_id, "message": "a test of the team's notifications"}
        return await enqueue(
            conn,
            team_id=team_id,
            url=url,
            event_type="notification.test",
            payload=payload("notification.test", data, now),
            source="notification",
            give_up_at_ms=now + TEST_WINDOW_MS,
        )


async def expiring_keys(engine: AsyncEngine, *, limit: int = 500) -> int:
    """Send `key.expiring` for every live key that expires within its team's `key_expiry_days` and has not
    had it for this expiry; how many were sent. Safe to run in every process at once (the mark decides)."""
    now = now_ms()
    k, n, m = api_keys.c, team_notifications.c, notification_marks.c
    query = (
        select(k.id, k.team_id, k.name, k.prefix, k.expires_at_ms, n.url, n.key_expiry_days)
        .join(team_notifications, n.team_id == k.team_id)
        .where(
            n.url.is_not(None),
            n.key_expiry_days.is_not(None),
            k.revoked_at_ms.is_(None),
            k.expires_at_ms > now,
            # In 64 bits on PostgreSQL (an integer column times a day in ms overflows 32).
            k.expires_at_ms
            <= literal(now, BigInteger) + cast(n.key_expiry_days, BigInteger) * literal(DAY_MS, BigInteger),
            ~exists().where(m.key_id == k.id, m.event == "key.expiring", m.period_ms == k.expires_at_ms),
        )
        .limit(limit)
    )
    async with engine.connect() as conn:
        rows = (await conn.execute(query)).all()
    sent = 0
    for row in rows:
        async with engine.begin() as conn:
            if not await _mark(conn, row.id, "key.expiring", int(row.expires_at_ms), 0):
                continue
            data = {
                "key_id": row.id,
                "key_name": row.name,
                "key_prefix": row.prefix,
                "expires_at": int(row.expires_at_ms) // 1000,
                "key_expiry_days": int(row.key_expiry_days),
            }
            await _send(conn, row.team_id, row.url, "key.expiring", data)
            sent += 1
    return sent
