"""What every command shares: settings from the environment (options override), a database session, the
operator service, and the output of a result as text or `--json`."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import click
from pydantic import ValidationError

from modelport.accounts.audit import Actor
from modelport.catalog import CatalogFileError
from modelport.errors import ServiceError
from modelport.operator.verbs import Operator
from modelport.process.bootstrap import PRIVATE_UMASK, StartupError, ensure_schema
from modelport.response_cache import make_store
from modelport.services import make_redis
from modelport.settings import Settings, load_settings
from modelport.storage.db import create_engine
from modelport.web.envelope import encode_json

T = TypeVar("T")


def load(**overrides: Any) -> Settings:
    os.umask(PRIVATE_UMASK)  # every file a command creates (database, secret key, spills) is 0600
    try:
        return load_settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        # Field and message only: an input value may be a secret (an admin token refused as too short).
        lines = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)]
        raise click.ClickException("invalid settings:\n" + "\n".join(lines)) from exc
    except ValueError as exc:
        raise click.ClickException(f"invalid settings:\n{exc}") from exc


def run_db(settings: Settings, action: Callable[[Any], Awaitable[T]], *, migrate_sqlite: bool = True) -> T:
    async def main() -> T:
        engine = create_engine(settings.effective_database_url)
        try:
            if migrate_sqlite:
                await ensure_schema(engine, settings)
            return await action(engine)
        finally:
            await engine.dispose()

    try:
        return asyncio.run(main())
    except ServiceError as exc:
        raise click.ClickException(exc.media_message) from exc
    except (StartupError, CatalogFileError) as exc:
        raise click.ClickException(str(exc)) from exc


def operate(settings: Settings, action: Callable[[Operator], Awaitable[T]]) -> T:
    """Run one operator verb (`operator.verbs`, the same service the admin API and console call)."""

    async def run(engine: Any) -> T:
        # The response cache's store (Redis when configured): turning a team's cache off purges it.
        redis = make_redis(settings.redis_url) if settings.redis_url else None
        try:
            cache = make_store(settings, engine, redis)
            return await action(Operator(engine, settings.tiers, actor=Actor("operator_cli"), cache=cache))
        finally:
            if redis is not None:
                await redis.aclose()

    return run_db(settings, run)


def emit(as_json: bool, data: Any, text: str) -> None:
    if as_json:
        click.echo(encode_json(data).decode())
    else:
        click.echo(text)
