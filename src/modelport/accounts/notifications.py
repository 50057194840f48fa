"""A team's notification settings: where its balance and key events go, and their thresholds.

`{"url", "balance_below_usd", "key_spend_percent", "key_expiry_days"}`, every field optional; a PUT
replaces the whole set (a field left out is off). `parse` checks the shape (400 naming the field); the URL's
address is checked by the SSRF-safe fetcher at the HTTP edge, as a task's webhook URL is. `store` writes
the settings and their audit event in one transaction. The events themselves: `billing.notify`, which
sets and clears the sent-once flags of the balance events through the compare-and-sets at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from sqlalchemy import select, update
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from modelport.accounts import audit
from modelport.accounts.audit import Actor, mask_value
from modelport.accounts.tables import team_notifications
from modelport.clock import now_ms
from modelport.errors import InvalidParameters
from modelport.money import MAX_BALANCE_MICROS, MICROS_PER_USD, display_usd, usd_to_micros

FIELDS = ("url", "balance_below_usd", "key_spend_percent", "key_expiry_days")
MAX_URL = 2048  # as a task's X-Webhook-URL
MAX_PERCENTS = 10
MAX_EXPIRY_DAYS = 365


@dataclass(frozen=True, slots=True)
class NotificationSettings:
    url: str | None = None
    balance_below_micros: int | None = None
    key_spend_percent: tuple[int, ...] = ()
    key_expiry_days: int | None = None

    def to_public(self) -> dict[str, Any]:
        return {
            "url": self.url,
            "balance_below_usd": None if self.balance_below_micros is None else display_usd(self.balance_below_micros),
            "key_spend_percent": list(self.key_spend_percent),
            "key_expiry_days": self.key_expiry_days,
        }


def parse(body: Any) -> NotificationSettings:
    """The settings of a PUT body; InvalidParameters naming the field for anything wrong."""
    if body is None:
        body = {}
    if not isinstance(body, dict):
        raise InvalidParameters("the request body must be a JSON object", param="body")
    unknown = sorted(set(body) - set(FIELDS))
    if unknown:
        raise InvalidParameters(
            f"unknown field {unknown[0]!r}: the fields are {', '.join(FIELDS)}", param=str(unknown[0])[:64]
        )
    return NotificationSettings(
        url=_url(body.get("url")),
        balance_below_micros=_amount(body.get("balance_below_usd")),
        key_spend_percent=_percents(body.get("key_spend_percent")),
        key_expiry_days=_days(body.get("key_expiry_days")),
    )


def _url(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParameters("url must be a string (an https URL) or null", param="url")
    url = value.strip()
    if not url:
        raise InvalidParameters("url is empty: send null to stop notifications", param="url")
    if len(url) > MAX_URL:
        raise InvalidParameters(f"url is longer than {MAX_URL} characters", param="url")
    return url


def _amount(value: Any) -> int | None:
    if value is None:
        return None
    # Strings ("5.00") and integers are exact; a float is refused rather than rounded into money.
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise InvalidParameters('balance_below_usd must be a decimal string such as "5.00"', param="balance_below_usd")
    try:
        micros = usd_to_micros(value)
    except ValueError as exc:
        raise InvalidParameters(f"balance_below_usd: {exc}", param="balance_below_usd") from None
    if micros <= 0 or micros > MAX_BALANCE_MICROS:
        raise InvalidParameters(
            f"balance_below_usd must be more than 0 and at most {MAX_BALANCE_MICROS // MICROS_PER_USD} USD",
            param="balance_below_usd",
        )
    return micros


def _percents(value: Any) -> tuple[int, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InvalidParameters(
            "key_spend_percent must be a list of integers, e.g. [80, 100]", param="key_spend_percent"
        )
    if len(value) > MAX_PERCENTS:
        raise InvalidParameters(f"key_spend_percent has at most {MAX_PERCENTS} values", param="key_spend_percent")
    for item in value:
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= 100:
            raise InvalidParameters(
                "key_spend_percent values are whole percents from 1 to 100", param="key_spend_percent"
            )
    if len(set(value)) != len(value):
        raise InvalidParameters("key_spend_percent lists a percent twice", param="key_spend_percent")
    return tuple(sorted(value))


def _days(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_EXPIRY_DAYS:
        raise InvalidParameters(
            f"key_expiry_days must be a whole number of days from 1 to {MAX_EXPIRY_DAYS}", param="key_expiry_days"
        )
    return value


def from_row(row: Any) -> NotificationSettings:
    percents = tuple(int(p) for p in row.key_spend_percent.split(",")) if row.key_spend_percent else ()
    return NotificationSettings(
        url=row.url,
        balance_below_micros=None if row.balance_below_micros is None else int(row.balance_below_micros),
        key_spend_percent=percents,
        key_expiry_days=None if row.key_expiry_days is None else int(row.key_expiry_days),
    )


async def load(engine: AsyncEngine, team_id: str) -> NotificationSettings:
    async with engine.connect() as conn:
        row = (await conn.execute(select(team_notifications).where(team_notifications.c.team_id == team_id))).first()
    return NotificationSettings() if row is None else from_row(row)


def _upsert(conn: AsyncConnection) -> Any:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(team_notifications)


async def store(engine: AsyncEngine, team_id: str, new: NotificationSettings, actor: Actor | None) -> None:
    """Replace the team's settings; the audit event commits with them. A changed balance threshold arms
    `balance.low` again (the next charge below it sends it); the exhausted flag is left as it is."""
    async with engine.begin() as conn:
        query = select(team_notifications).where(team_notifications.c.team_id == team_id)
        if conn.dialect.name == "postgresql":
            query = query.with_for_update()
        row = (await conn.execute(query)).first()
        before = NotificationSettings() if row is None else from_row(row)
        values: dict[str, Any] = {
            "url": new.url,
            "balance_below_micros": new.balance_below_micros,
            "key_spend_percent": ",".join(str(p) for p in new.key_spend_percent) or None,
            "key_expiry_days": new.key_expiry_days,
            "updated_at_ms": now_ms(),
        }
        if row is None or before.balance_below_micros != new.balance_below_micros:
            values["balance_low_sent"] = False
        await conn.execute(
            _upsert(conn)
            .values(team_id=team_id, **values)
            .on_conflict_do_update(index_elements=["team_id"], set_=values)
        )
        await audit.record(
            conn,
            actor,
            "team.notifications",
            team_id=team_id,
            target=team_id,
            before=None if row is None else _audited(before),
            after=_audited(new),
        )


def _audited(found: NotificationSettings) -> dict[str, Any]:
    """The settings as the audit log keeps them: the URL's path and query masked, since a receiver's URL is
    often its credential (a hook URL with a token in it)."""
    view = found.to_public()
    if found.url is not None:
        parts = urlsplit(found.url)
        rest = found.url[len(f"{parts.scheme}://{parts.netloc}") :]
        view["url"] = f"{parts.scheme}://{parts.netloc}" + (mask_value(rest) if rest.strip("/") else rest)
    return view


# -- the sent-once flags of the balance events (billing.notify, in the transaction that moves the money) -----


async def claim_balance_low(conn: AsyncConnection, team_id: str) -> bool:
    """Set `balance_low_sent`; True when this transaction set it (and so sends `balance.low`)."""
    n = team_notifications.c
    won = await conn.execute(
        update(team_notifications)
        .where(n.team_id == team_id, n.balance_low_sent.is_(False))
        .values(balance_low_sent=True)
    )
    return bool(won.rowcount)


async def claim_exhausted(conn: AsyncConnection, team_id: str) -> str | None:
    """Set `exhausted_sent` of a team with a URL; the URL when this transaction set it (and so sends
    `balance.exhausted`), else None."""
    n = team_notifications.c
    won = (
        await conn.execute(
            update(team_notifications)
            .where(n.team_id == team_id, n.url.is_not(None), n.exhausted_sent.is_(False))
            .values(exhausted_sent=True)
            .returning(n.url)
        )
    ).first()
    return None if won is None else str(won.url)


async def rearm_after_topup(conn: AsyncConnection, team_id: str, funds_micros: int) -> None:
    """Clear `exhausted_sent`, and `balance_low_sent` when `funds_micros` (available + frozen) is at or above
    the threshold (or no threshold is set)."""
    n = team_notifications.c
    await conn.execute(
        update(team_notifications).where(n.team_id == team_id, n.exhausted_sent.is_(True)).values(exhausted_sent=False)
    )
    await conn.execute(
        update(team_notifications)
        .where(
            n.team_id == team_id,
            n.balance_low_sent.is_(True),
            (n.balance_below_micros.is_(None)) | (n.balance_below_micros <= funds_micros),
        )
        .values(balance_low_sent=False)
    )
