"""TOTP secrets at rest (issue 37): `users.totp_secret` holds the secret sealed by the service's secret box
(`accounts/totp_secrets.py`), never the base32 text, on both databases. A plain secret from before
migration 0033 survives the migration, still verifies, and is sealed by the start-up reseal; a key rotation
re-seals under the new key; a `serve` start seals it too and sign-in with the code keeps working."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pyotp
import pytest
from alembic import command
from sqlalchemy import Connection, insert, select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import credentials, totp_secrets, users
from modelport.accounts.audit import Actor
from modelport.accounts.tables import users as users_table
from modelport.secret_box import SecretBox, UnreadableSecret
from modelport.storage.db import create_engine
from modelport.storage.migrate import alembic_config, upgrade_to_head
from modelport.webhooks.secret_box import WEBHOOK_SECRETS
from tests.support.accounts import PASSWORD, admin, browser, close_browsers, set_password
from tests.support.databases import BACKENDS, database_url, migrated_engine
from tests.support.server import RunningServer, run_server

ACTOR = Actor("operator_cli")
OLD_KEY = "totp-at-rest-old-secret-key-0123456789abcdef"
NEW_KEY = "totp-at-rest-new-secret-key-0123456789abcdef"
TOKEN = "totp-at-rest-admin-token-0123456789-abcdef"


def _box(current: str, previous: str | None = None) -> SecretBox:
    return SecretBox(current, previous, purpose=totp_secrets.TOTP_SECRETS)


async def _stored(engine: AsyncEngine, user_id: str) -> str:
    async with engine.connect() as conn:
        return str(await conn.scalar(select(users_table.c.totp_secret).where(users_table.c.id == user_id)))


async def _forget_last_step(engine: AsyncEngine, user_id: str) -> None:
    """Let the current code be accepted again (each step is accepted once)."""
    async with engine.begin() as conn:
        await conn.execute(update(users_table).where(users_table.c.id == user_id).values(totp_last_step=None))


@pytest.mark.parametrize("backend", BACKENDS)
async def test_enrolment_stores_only_the_sealed_secret(backend: str, tmp_path: Path) -> None:
    box = _box(OLD_KEY)
    async with migrated_engine(backend, tmp_path) as engine:
        async with engine.begin() as conn:
            user_id = await users.create_user_in(conn, "enrol@example.com", actor=ACTOR, password=PASSWORD)
        user = await users.get_user(engine, user_id)
        secret = await credentials.start_second_factor(engine, box, user)
        stored = await _stored(engine, user_id)
        assert stored.startswith("mpts1.") and secret not in stored
        assert await credentials.pending_secret(engine, box, user_id) == secret
        codes = await credentials.confirm_second_factor(engine, box, user, pyotp.TOTP(secret).now(), actor=ACTOR)
        assert len(codes) == 10 and await _stored(engine, user_id) == stored
        assert await credentials.check_second_factor(engine, box, user_id, pyotp.TOTP(secret).now())
        # Another key, or the same key for another purpose (webhook secrets), opens nothing.
        with pytest.raises(UnreadableSecret):
            await credentials.check_second_factor(engine, _box(NEW_KEY), user_id, "123456")
        with pytest.raises(UnreadableSecret):
            SecretBox(OLD_KEY, purpose=WEBHOOK_SECRETS).open(user_id, "mpws1." + stored[len("mpts1.") :])
        # A sealed value copied to another user's row does not open there.
        async with engine.begin() as conn:
            other = await users.create_user_in(conn, "copy@example.com", actor=ACTOR, password=PASSWORD)
            await conn.execute(
                update(users_table).where(users_table.c.id == other).values(totp_secret=stored, totp_enabled=True)
            )
        with pytest.raises(UnreadableSecret):
            await credentials.check_second_factor(engine, box, other, pyotp.TOTP(secret).now())


def _upgrade(connection: Connection, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, revision)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_plain_secret_survives_the_upgrade_and_is_sealed_by_the_reseal(backend: str, tmp_path: Path) -> None:
    secret = pyotp.random_base32()
    async with database_url(backend, tmp_path) as url:
        engine = create_engine(url)
        try:
            async with engine.begin() as conn:
                await conn.run_sync(_upgrade, "0030")
                await conn.execute(
                    insert(users_table).values(
                        id="usr_plain",
                        email="plain@example.com",
                        email_key="plain@example.com",
                        status="active",
                        totp_secret=secret,
                        totp_enabled=True,
                        created_at_ms=1,
                    )
                )
            await upgrade_to_head(engine)
            assert await _stored(engine, "usr_plain") == secret  # the migration keeps it (it has no key)
            old = _box(OLD_KEY)
            assert await credentials.check_second_factor(engine, old, "usr_plain", pyotp.TOTP(secret).now())
            assert await totp_secrets.reseal_all(engine, old) == 1
            sealed = await _stored(engine, "usr_plain")
            assert sealed.startswith("mpts1.") and secret not in sealed
            assert await totp_secrets.reseal_all(engine, old) == 0  # nothing left to seal
            await _forget_last_step(engine, "usr_plain")
            assert await credentials.check_second_factor(engine, old, "usr_plain", pyotp.TOTP(secret).now())

            # Rotation: the new key with the old one as previous re-seals; then the new key alone opens it.
            assert await totp_secrets.reseal_all(engine, _box(NEW_KEY, OLD_KEY)) == 1
            with pytest.raises(UnreadableSecret, match="MODELPORT_PREVIOUS_SECRET_KEY"):
                await totp_secrets.reseal_all(engine, old)
            await _forget_last_step(engine, "usr_plain")
            assert await credentials.check_second_factor(engine, _box(NEW_KEY), "usr_plain", pyotp.TOTP(secret).now())
        finally:
            await engine.dispose()


def _column(data_dir: Path, email: str) -> str:
    with sqlite3.connect(data_dir / "modelport.db") as db:
        (value,) = db.execute("SELECT totp_secret FROM users WHERE email = ?", (email,)).fetchone()
    return str(value)


def _code_sign_in(server: RunningServer, email: str, secret: str) -> int:
    client = browser(server)
    first = client.post_form("/sign-in", {"email": email, "password": PASSWORD})
    assert first.status_code == 303 and first.headers["location"].endswith("/sign-in/code")
    status = client.post_form("/sign-in/code", {"code": pyotp.TOTP(secret).now()}).status_code
    close_browsers()
    return status


def test_serve_seals_plain_secrets_at_start_and_sign_in_keeps_working(tmp_path: Path) -> None:
    email = "restart@example.com"
    with run_server(tmp_path, MODELPORT_SECRET_KEY=OLD_KEY, MODELPORT_ADMIN_TOKEN=TOKEN) as server:
        made = admin(server, TOKEN, "POST", "/users", json={"email": email})
        assert made.status_code == 200, made.text
        client = set_password(server, made.json()["data"]["setup_url"])
        started = client.post_form("/profile/second-factor/start", {}, csrf_from="/profile")
        assert started.status_code == 200
        shown = re.search(r'id="totp-secret">([A-Z2-7]+)<', started.text)
        assert shown is not None
        secret = shown.group(1)
        code = {"code": pyotp.TOTP(secret).now()}
        confirmed = client.post_form("/profile/second-factor/confirm", code, csrf_from="/profile")
        assert confirmed.status_code == 200
        close_browsers()
        assert _column(tmp_path, email).startswith("mpts1.") and secret not in _column(tmp_path, email)
        # The row as a version before 0033 wrote it: read as it is.
        with sqlite3.connect(tmp_path / "modelport.db") as db:
            db.execute("UPDATE users SET totp_secret = ?, totp_last_step = NULL WHERE email = ?", (secret, email))
        assert _code_sign_in(server, email, secret) == 303

    with sqlite3.connect(tmp_path / "modelport.db") as db:
        db.execute("UPDATE users SET totp_last_step = NULL WHERE email = ?", (email,))
    with run_server(tmp_path, MODELPORT_SECRET_KEY=NEW_KEY, MODELPORT_PREVIOUS_SECRET_KEY=OLD_KEY) as server:
        sealed = _column(tmp_path, email)
        assert sealed.startswith("mpts1.") and secret not in sealed  # sealed by the start, under the new key
        assert _code_sign_in(server, email, secret) == 303
