"""Start-up work done once, before any serving process starts: schema, catalog import, demo team."""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import text
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.accounts import totp_secrets
from modelport.billing import reservations
from modelport.billing.rates import log_derived_cache_prices
from modelport.billing.settlement import prune_settlement_keys
from modelport.billing.topups import topup_team
from modelport.catalog import import_catalog, load_catalog_file, read_snapshot
from modelport.errors import NotFound
from modelport.secret_box import UnreadableSecret
from modelport.secret_box import secret_box as generic_box
from modelport.services import ensure_secret_key
from modelport.settings import Settings
from modelport.storage.db import create_engine
from modelport.storage.schema_version import schema_state, sqlite_state
from modelport.webhooks.secret_box import secret_box
from modelport.webhooks.secrets import reseal_all

log = logging.getLogger("modelport.bootstrap")
# Start-up work of several processes starting at once (a scaled-out deployment's first start) runs one at a time.
_PG_STARTUP_LOCK = 7_236_002


@asynccontextmanager
async def startup_lock(engine: AsyncEngine) -> AsyncIterator[None]:
    """On PostgreSQL, a session advisory lock around the start-up work: two servers starting together on
    a fresh database would otherwise both import the catalog and both create the demo team. SQLite
    serialises writers already (BEGIN IMMEDIATE) and is one machine."""
    if engine.dialect.name != "postgresql":
        yield
        return
    async with engine.connect() as conn:
        await conn.execute(text("SELECT pg_advisory_lock(:k)"), {"k": _PG_STARTUP_LOCK})
        await conn.commit()
        try:
            yield
        finally:
            await conn.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": _PG_STARTUP_LOCK})
            await conn.commit()


class StartupError(RuntimeError):
    """A problem an operator must fix; the message says how."""


@dataclass(frozen=True, slots=True)
class DemoInfo:
    team_name: str
    new_key: str | None  # plaintext, only when this start created it
    key_prefixes: list[str]


PRIVATE_UMASK = 0o077  # files 0600, directories 0700


def secure_data_dir(settings: Settings) -> str | None:
    """Make what this process creates private to its user and create the data directory 0700.

    The data directory holds the SQLite database (every team's logs, retained payloads, webhook
    secrets), the secret key, spill files and media files. Returns a warning (also logged) when it
    existed already with access for the group or others: that is left as the operator set it."""
    os.umask(PRIVATE_UMASK)
    path = settings.data_dir
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o777
    if not mode & 0o077:
        return None
    warning = (
        f"warning: the data directory {path} is open to other users (mode {mode:04o}); "
        f"it holds the database and the secret key: chmod 700 {path}"
    )
    log.warning("%s", warning)
    return warning


async def ensure_schema(engine: AsyncEngine, settings: Settings) -> None:
    state = await schema_state(engine)
    if settings.is_sqlite:
        if state != "current":
            # Alembic is imported only to migrate (a first start, or a new version): later starts skip it.
            from modelport.storage.migrate import upgrade_to_head

            await upgrade_to_head(engine)
        return
    if state == "behind":
        raise StartupError("the PostgreSQL schema is not up to date: run `modelport migrate` first")
    if state == "ahead":
        # A rolling upgrade in progress (or a rollback): the newer schema only added to ours.
        log.warning("the PostgreSQL schema is newer than this version's migrations; starting anyway")


@dataclass(frozen=True, slots=True)
class Migration:
    """A migration running in a forked child (`start_sqlite_migration`)."""

    pid: int

    def wait(self) -> None:
        _, status = os.waitpid(self.pid, 0)
        if os.waitstatus_to_exitcode(status) != 0:
            raise StartupError("migrating the SQLite database failed (the error is logged above)")


def start_sqlite_migration(settings: Settings) -> Migration | None:
    """`serve` on an SQLite file behind this version's head (a first start, a new version): migrate in a
    forked child, so Alembic (~11 MiB that Python never gives back) stays out of the process that goes on
    to serve, and the parent can import what it serves with meanwhile (the other core). Called before any
    event loop or thread exists, which is what makes the fork safe. None: nothing to migrate."""
    if not settings.is_sqlite:
        return None
    database = make_url(settings.effective_database_url).database
    if not database or database == ":memory:" or sqlite_state(Path(database)) == "current":
        return None
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:  # the child: migrate, then leave without running the parent's exit handlers
        code = 1
        try:
            asyncio.run(_migrate(settings.effective_database_url))
            code = 0
        except BaseException:
            log.exception("migrating the SQLite database failed")
        finally:
            os._exit(code)
    return Migration(pid)


async def _migrate(database_url: str) -> None:
    from modelport.storage.migrate import upgrade_to_head

    engine = create_engine(database_url)
    try:
        await upgrade_to_head(engine)
    finally:
        await engine.dispose()


async def ensure_demo_team(engine: AsyncEngine, settings: Settings) -> DemoInfo:
    name = settings.demo_team
    try:
        team = await accounts.get_team(engine, name)
    except NotFound:
        team = await accounts.create_team(engine, name, tier=settings.tiers[0].name)
        if settings.demo_balance_usd > 0:
            await topup_team(engine, settings.tiers, team.id, settings.demo_balance_usd)
        created = await accounts.create_key(engine, team.id, name="demo")
        return DemoInfo(team_name=name, new_key=created.key, key_prefixes=[created.record.prefix])
    keys = [k for k in await accounts.list_keys(engine, team.id) if k.active]
    if not keys:
        created = await accounts.create_key(engine, team.id, name="demo")
        return DemoInfo(team_name=name, new_key=created.key, key_prefixes=[created.record.prefix])
    return DemoInfo(team_name=name, new_key=None, key_prefixes=[k.prefix for k in keys])


async def prepare(engine: AsyncEngine, settings: Settings, *, demo: bool = True) -> DemoInfo | None:
    await _check_operator_url(settings)
    await ensure_schema(engine, settings)
    async with startup_lock(engine):
        await import_catalog(engine, load_catalog_file(settings.catalog))
        log_derived_cache_prices((await read_snapshot(engine)).text.values())
        # Reservations of processes that died (their lease ran out); every process also sweeps periodically.
        await reservations.sweep(engine)
        await prune_settlement_keys(engine)
        await _reseal_secrets(engine, settings)
        return await ensure_demo_team(engine, settings) if demo else None


async def _check_operator_url(settings: Settings) -> None:
    if settings.operator_webhook_url is None:
        return
    from modelport.alerts.service import check_operator_url  # the fetcher (aiohttp) only when configured

    try:
        await check_operator_url(settings)
    except ValueError as exc:
        raise StartupError(str(exc)) from exc


async def _reseal_secrets(engine: AsyncEngine, settings: Settings) -> None:
    """Webhook and TOTP secrets stored in plain text (before encryption at rest) or under the previous secret
    key are sealed under the current one."""
    previous = settings.previous_secret_key
    current, before = ensure_secret_key(settings), previous.get_secret_value() if previous else None
    try:
        webhooks = await reseal_all(engine, secret_box(current, before))
        totp = await totp_secrets.reseal_all(engine, generic_box(current, before, totp_secrets.TOTP_SECRETS))
    except UnreadableSecret as exc:
        raise StartupError(str(exc)) from exc
    if webhooks:
        log.info("encrypted %s webhook secrets under the current secret key", webhooks)
    if totp:
        log.info("encrypted %s TOTP secrets under the current secret key", totp)


async def prepare_worker(engine: AsyncEngine, settings: Settings) -> None:
    """A `modelport worker`'s start: schema and catalog only (stale holds are serve's job, done once)."""
    await _check_operator_url(settings)
    await ensure_schema(engine, settings)
    async with startup_lock(engine):
        await import_catalog(engine, load_catalog_file(settings.catalog))
