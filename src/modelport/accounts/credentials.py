"""A person's own credentials: checking a password and a second factor at sign-in, and changing them.

The sign-in door (the console today; OIDC and SCIM later reuse `signed_in`) calls `check_password`, then
`check_second_factor` when the account has one. Neither says whether an email exists: an unknown email,
a disabled account, an account without a password yet and a wrong password all give None, after the same
argon2 work. The limit on failures is the door's (`console/sessions.py`): it counts only refusals, after the
check, so a correct credential is never refused by it.
"""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import audit, totp, totp_secrets
from modelport.accounts.audit import Actor
from modelport.accounts.passwords import hash_password_off_loop, needs_rehash, verify_password_off_loop
from modelport.accounts.tables import users
from modelport.accounts.users import User, email_key, end_person_sessions_in, get_user, set_password_in
from modelport.clock import now_ms
from modelport.errors import Forbidden, InvalidParameters
from modelport.secret_box import SecretBox


async def check_password(engine: AsyncEngine, email: str, password: str) -> User | None:
    """The active account with this email and password, else None (whatever the reason)."""
    async with engine.connect() as conn:
        row = (await conn.execute(select(users).where(users.c.email_key == email_key(email)))).first()
    stored = None if row is None else row.password_hash
    if not await verify_password_off_loop(stored, password) or row is None or row.status != "active":
        return None
    if needs_rehash(stored or ""):  # argon2's parameters were raised since: store the stronger hash
        hashed = await hash_password_off_loop(password)
        async with engine.begin() as conn:
            await conn.execute(update(users).where(users.c.id == row.id).values(password_hash=hashed))
    return await get_user(engine, row.id)


async def check_second_factor(engine: AsyncEngine, box: SecretBox, user_id: str, code: str) -> bool:
    """A TOTP code, or one of the recovery codes (used up by this call). `box` opens the stored secret
    (`totp_secrets.TOTP_SECRETS`)."""
    async with engine.begin() as conn:
        row = (await conn.execute(select(users).where(users.c.id == user_id).with_for_update())).first()
        if row is None or not row.totp_enabled or row.totp_secret is None:
            return False
        step = totp.code_step(totp_secrets.open_secret(box, user_id, row.totp_secret), code)
        if step is not None:
            if row.totp_last_step is not None and step <= row.totp_last_step:
                return False  # this code (or an older one) was used already
            await conn.execute(update(users).where(users.c.id == user_id).values(totp_last_step=step))
            return True
        stored = list(row.recovery_codes or [])
        used = totp.matching_recovery(stored, code)
        if used is None:
            return False
        stored.remove(used)
        await conn.execute(update(users).where(users.c.id == user_id).values(recovery_codes=stored))
    return True


async def signed_in(engine: AsyncEngine, user: User, actor: Actor, *, method: str = "password") -> None:
    """Record a completed sign-in (the time, and the audit event with how: `password` or `oidc`)."""
    async with engine.begin() as conn:
        await conn.execute(update(users).where(users.c.id == user.id).values(last_sign_in_at_ms=now_ms()))
        after = None if method == "password" else {"method": method}
        await audit.record(conn, actor, "user.sign_in", team_id=None, target=user.id, after=after)


async def record_failed_sign_in(engine: AsyncEngine, email: str, actor: Actor) -> None:
    """A refused sign-in, as an audit event about the email tried (the door records only those within its
    failure limit, so a spray cannot fill the log)."""
    async with engine.begin() as conn:
        await audit.record(conn, actor, "user.sign_in_failed", team_id=None, target=email_key(email)[:120])


async def change_password(
    engine: AsyncEngine, user: User, current: str, new: str, *, actor: Actor, keep_session: str | None
) -> None:
    """The person's own password change: the current one is required; their other sessions end."""
    stored = None
    async with engine.connect() as conn:
        stored = await conn.scalar(select(users.c.password_hash).where(users.c.id == user.id))
    if not await verify_password_off_loop(stored, current):
        raise Forbidden("the current password is not correct")
    async with engine.begin() as conn:
        await set_password_in(conn, user.id, new, email=user.email)
        await end_person_sessions_in(conn, user.id, keep=keep_session)
        await audit.record(conn, actor, "user.password", team_id=None, target=user.id, after={"by": "self"})


async def start_second_factor(engine: AsyncEngine, box: SecretBox, user: User) -> str:
    """A new TOTP secret, stored sealed but not yet enabled (enabled once a code from it is confirmed)."""
    if user.totp_enabled:
        raise InvalidParameters("the second factor is already on: turn it off first")
    secret = totp.new_secret()
    sealed = totp_secrets.seal(box, user.id, secret)
    async with engine.begin() as conn:
        await conn.execute(update(users).where(users.c.id == user.id).values(totp_secret=sealed))
    return secret


async def pending_secret(engine: AsyncEngine, box: SecretBox, user_id: str) -> str | None:
    async with engine.connect() as conn:
        value = await conn.scalar(select(users.c.totp_secret).where(users.c.id == user_id))
    return None if value is None else totp_secrets.open_secret(box, user_id, str(value))


async def confirm_second_factor(
    engine: AsyncEngine, box: SecretBox, user: User, code: str, *, actor: Actor
) -> list[str]:
    """Turn the second factor on with a code from the new secret; returns the 10 recovery codes (shown once)."""
    secret = await pending_secret(engine, box, user.id)
    if secret is None or user.totp_enabled:
        raise InvalidParameters("start setting up the second factor first")
    if not totp.code_valid(secret, code):
        raise InvalidParameters("that code is not correct: check the authenticator app's clock", param="code")
    codes = totp.new_recovery_codes()
    async with engine.begin() as conn:
        await conn.execute(
            update(users)
            .where(users.c.id == user.id)
            .values(totp_enabled=True, recovery_codes=[totp.recovery_digest(c) for c in codes])
        )
        await audit.record(conn, actor, "user.second_factor_on", team_id=None, target=user.id)
    return codes


async def turn_off_second_factor(engine: AsyncEngine, user: User, password: str, *, actor: Actor) -> None:
    async with engine.connect() as conn:
        stored = await conn.scalar(select(users.c.password_hash).where(users.c.id == user.id))
    if not await verify_password_off_loop(stored, password):
        raise Forbidden("the current password is not correct")
    async with engine.begin() as conn:
        await conn.execute(
            update(users).where(users.c.id == user.id).values(totp_enabled=False, totp_secret=None, recovery_codes=None)
        )
        await audit.record(conn, actor, "user.second_factor_off", team_id=None, target=user.id)
