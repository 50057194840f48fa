"""The `modelport` command: serve, migrate, and the admin verbs (each with --json)."""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import gc
import gzip
import logging
import os
import shutil
import sqlite3
import sys
from collections.abc import Awaitable, Callable, Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any, BinaryIO, TypeVar, cast

import click
from pydantic import ValidationError
from sqlalchemy.engine import make_url

from modelport.accounts.audit import Actor
from modelport.accounts.models import Team
from modelport.billing.operator import Operator, check_tier
from modelport.bootstrap import (
    PRIVATE_UMASK,
    StartupError,
    ensure_schema,
    prepare,
    prepare_worker,
    secure_data_dir,
    start_sqlite_migration,
)
from modelport.catalog import CatalogFileError
from modelport.errors import InvalidParameters, ServiceError
from modelport.settings import Settings, load_settings
from modelport.storage.db import create_engine
from modelport.web.envelope import encode_json

T = TypeVar("T")


def _settings(**overrides: Any) -> Settings:
    os.umask(PRIVATE_UMASK)  # every file a command creates (database, secret key, spills) is 0600
    try:
        return load_settings(**{k: v for k, v in overrides.items() if v is not None})
    except ValidationError as exc:
        # Field and message only: an input value may be a secret (an admin token refused as too short).
        lines = [f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)]
        raise click.ClickException("invalid settings:\n" + "\n".join(lines)) from exc
    except ValueError as exc:
        raise click.ClickException(f"invalid settings:\n{exc}") from exc


def _run_db(settings: Settings, action: Callable[[Any], Awaitable[T]], *, migrate_sqlite: bool = True) -> T:
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


def _operate(settings: Settings, action: Callable[[Operator], Awaitable[T]]) -> T:
    """Run one operator verb (`billing.operator`, the same service the admin API and console call)."""
    return _run_db(settings, lambda engine: action(Operator(engine, settings.tiers, actor=Actor("operator_cli"))))


def _emit(as_json: bool, data: Any, text: str) -> None:
    if as_json:
        click.echo(encode_json(data).decode())
    else:
        click.echo(text)


@click.group()
def main() -> None:
    """modelport: one key, one balance and one log for every text and media model."""
    gc.enable()  # `python -m modelport` imported this module with it off (__main__.py)


@main.command()
@click.option(
    "--workers", "processes", type=click.IntRange(1, 64), default=1, show_default=True, help="Processes per host."
)
@click.option("--host", default=None, help="Interface to listen on (default 127.0.0.1).")
@click.option("--media-port", type=int, default=None, help="Media host port (default 8080).")
@click.option("--text-port", type=int, default=None, help="Text gateway port (default 8081).")
@click.option(
    "--no-workers",
    "no_workers",
    is_flag=True,
    help="Run no media task workers in this process (leave the work to `modelport worker` processes).",
)
def serve(processes: int, host: str | None, media_port: int | None, text_port: int | None, no_workers: bool) -> None:
    """Run the media host and the text gateway."""
    from modelport import launch
    from modelport.logs import configure_logging

    # Start-up imports ~240,000 objects that live as long as the serving processes: collecting while importing
    # them is ~20 % of the import time. serve_both turns the collector on again once they are frozen.
    gc.disable()
    settings = _settings(host=host, media_port=media_port, text_port=text_port)
    if no_workers:
        settings = settings.model_copy(update={"tasks": settings.tasks.model_copy(update={"run_workers": False})})
    configure_logging(settings.log_level, json_lines=settings.log_json)
    data_dir_warning = secure_data_dir(settings)
    migration = start_sqlite_migration(settings)
    from modelport import server

    # Needed anyway (serving in this process, or in processes forked from it); on a first start, imported
    # while the child migrates on the other core.
    server.import_apps()
    if migration is not None:
        try:
            migration.wait()
        except StartupError as exc:
            raise click.ClickException(str(exc)) from exc
    demo = _run_db(settings, lambda engine: prepare(engine, settings), migrate_sqlite=False)
    media_sock = launch.bind_socket(settings.host, settings.media_port)
    text_sock = launch.bind_socket(settings.host, settings.text_port)
    # With port 0 the OS picked the ports: the serving processes (and the public media URL default) need the real ones.
    settings = settings.model_copy(
        update={"media_port": media_sock.getsockname()[1], "text_port": text_sock.getsockname()[1]}
    )
    metrics = launch.start_metrics(settings, processes)
    media_url = f"http://{settings.host}:{settings.media_port}"
    text_url = f"http://{settings.host}:{settings.text_port}"
    lines = [
        f"media host:    {media_url}   (public URL {settings.public_media_url or media_url})",
        f"text gateway:  {text_url}   (OpenAI SDK base_url {text_url}/v1, Anthropic SDK base_url {text_url})",
        f"console:       {settings.public_media_url or media_url}/console/   (sign in with a team API key)",
        f"API reference: {settings.public_media_url or media_url}/docs",
    ]
    if metrics is not None:
        lines.append(f"metrics:       {metrics.url}   (Prometheus text format)")
    if data_dir_warning is not None:
        lines.append(data_dir_warning)
    if settings.public_media_url and settings.public_media_url.startswith("http://"):
        lines.append("warning: MODELPORT_PUBLIC_MEDIA_URL is plain http://; use https:// in production")
    allowed = sorted(settings.net.allowed_pairs())
    if allowed or settings.net.ca_bundle is not None:
        logging.getLogger("modelport.net").warning(
            "user URL fetcher: allow_hosts=%s ca_bundle=%s", allowed, settings.net.ca_bundle
        )
    if allowed:
        lines.append(
            f"warning: MODELPORT_NET__ALLOW_HOSTS lets user URLs reach {', '.join(allowed)}"
            " (no address check, http allowed)"
        )
    if settings.net.ca_bundle is not None:
        lines.append(f"user URL fetches also trust the CA file {settings.net.ca_bundle} (MODELPORT_NET__CA_BUNDLE)")
    if processes > 1 and not settings.redis_url:
        lines.append("warning: --workers > 1 without MODELPORT_REDIS_URL: rate limits are counted per process")
    lines.append(_local_model_line(settings))
    if demo is not None and demo.new_key:
        lines.append(f"demo API key:  {demo.new_key}   (team {demo.team_name!r}; shown once, keep it)")
    elif demo is not None:
        lines.append(
            f"demo team {demo.team_name!r} has keys {', '.join(p + '...' for p in demo.key_prefixes)}; "
            f"make a new one with: modelport admin key create {demo.team_name}"
        )
    click.echo("\n".join(lines), err=False)
    sys.stdout.flush()
    launch.raise_open_file_limit()  # inherited across the exec and by every serving process
    if processes > 1:
        launch.serving_environment(settings)
        forked = server.fork_serving(processes, media_sock, text_sock, metrics)
        launch.exec_supervisor(settings, media_sock, text_sock, processes, metrics, forked)  # does not return
    server.serving_main(settings, media_sock, text_sock)


def _local_model_line(settings: Settings) -> str:
    """Says whether the embedded text model can answer now, or where its background build shows progress."""
    from modelport.upstreams.local_runtime import build_log, runtime_installed

    if runtime_installed():
        return "embedded text model: ready (llama-cpp-python installed; the model loads on its first request)"
    log = build_log(settings.data_dir)
    if log is not None:
        return (
            f"embedded text model: llama-cpp-python is building in the background (progress: {log}); "
            "the model is listed in /v1/models as soon as it can answer"
        )
    return (
        "embedded text model: not available (llama-cpp-python is not installed: bash scripts/install.sh local); "
        "configured upstreams answer"
    )


@main.command()
def worker() -> None:
    """Run media tasks, the task reconciler and webhook deliveries (no HTTP); start as many as you like."""
    from modelport.logs import configure_logging
    from modelport.worker import run_worker, start_metrics

    settings = _settings()
    configure_logging(settings.log_level, json_lines=settings.log_json)
    secure_data_dir(settings)
    # The schema (SQLite migrated, PostgreSQL must be up to date) and the catalog, as serve does.
    _run_db(settings, lambda engine: prepare_worker(engine, settings), migrate_sqlite=False)
    metrics_url = start_metrics(settings)
    click.echo("media task worker started", err=False)
    if metrics_url is not None:
        click.echo(f"metrics:       {metrics_url}   (Prometheus text format)", err=False)
    sys.stdout.flush()
    import uvloop

    uvloop.run(run_worker(settings))


@main.command()
def migrate() -> None:
    """Bring the database schema up to date."""
    from modelport.storage.migrate import upgrade_to_head

    settings = _settings()
    secure_data_dir(settings)
    _run_db(settings, upgrade_to_head, migrate_sqlite=False)
    click.echo("schema is up to date")


@main.group()
def admin() -> None:
    """Teams, keys, balances and tiers."""


@admin.group()
def team() -> None:
    """Teams."""


@team.command("create")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
def team_create(name: str, as_json: bool) -> None:
    created = _operate(_settings(), lambda op: op.create_team(name))
    _emit(as_json, created.to_public(), f"created team {created.name} ({created.id})")


@team.command("show")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_show(team_ref: str, as_json: bool) -> None:
    found = _operate(_settings(), lambda op: op.team(team_ref))
    pub = found.to_public()
    _emit(as_json, pub, "\n".join(f"{k}: {v}" for k, v in pub.items()))


@team.command("list")
@click.option("--json", "as_json", is_flag=True)
def team_list(as_json: bool) -> None:
    teams = _operate(_settings(), lambda op: op.list_teams())
    _emit(
        as_json,
        {"teams": [t.to_public() for t in teams]},
        "\n".join(
            f"{t.id}  {t.name}  {t.available_usd} USD  {t.tier}" + ("  suspended" if t.suspended else "") for t in teams
        )
        or "(no teams)",
    )


def _on_off(value: str | None) -> bool | None:
    return None if value is None else value == "on"


@team.command("set")
@click.argument("team_ref", metavar="TEAM")
@click.option("--asset-service", type=click.Choice(["on", "off"]), default=None)
@click.option("--log-retention", type=click.Choice(["on", "off"]), default=None)
@click.option(
    "--log-days",
    default=None,
    metavar="N",
    help="The team's request-log window in days (fractions allowed; 0: forever; 'default': the deployment's).",
)
@click.option("--json", "as_json", is_flag=True)
def team_set(
    team_ref: str, asset_service: str | None, log_retention: str | None, log_days: str | None, as_json: bool
) -> None:
    async def action(op: Operator) -> Team:
        updated = await op.set_flags(
            team_ref, asset_service=_on_off(asset_service), log_retention=_on_off(log_retention)
        )
        return updated if log_days is None else await op.set_log_days(team_ref, log_days)

    updated = _operate(_settings(), action)
    _emit(as_json, updated.to_public(), f"updated team {updated.name}")


@team.command("suspend")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_suspend(team_ref: str, as_json: bool) -> None:
    """Refuse every key of TEAM on both hosts (401) until `unsuspend`."""
    updated = _operate(_settings(), lambda op: op.suspend(team_ref))
    _emit(as_json, updated.to_public(), f"suspended team {updated.name}: its keys are refused")


@team.command("unsuspend")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_unsuspend(team_ref: str, as_json: bool) -> None:
    """Lift TEAM's suspension: its active keys work again."""
    updated = _operate(_settings(), lambda op: op.unsuspend(team_ref))
    _emit(as_json, updated.to_public(), f"team {updated.name} is no longer suspended")


@team.command("end-sessions")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_end_sessions(team_ref: str, as_json: bool) -> None:
    """End every console session of TEAM at once (its members sign in again)."""
    found, ended = _operate(_settings(), lambda op: op.end_sessions(team_ref))
    _emit(
        as_json, {"team": found.to_public(), "sessions_ended": ended}, f"ended {ended} console sessions of {found.name}"
    )


@admin.group()
def key() -> None:
    """API keys."""


def _key_limit_options(command: Callable[..., None]) -> Callable[..., None]:
    """The limit options `key create` and `key update` share; `none` clears a limit on update."""
    options = [
        click.option("--name", default=None),
        click.option("--spend-limit", "spend_limit", default=None, metavar="USD", help="spend limit per period"),
        click.option("--period", default=None, type=click.Choice(["day", "week", "month", "total"])),
        click.option("--models", default=None, help="comma-separated model-id patterns, e.g. 'openai/*,local/*'"),
        click.option("--rpm", default=None, help="requests per minute"),
        click.option("--tpm", default=None, help="text tokens per minute"),
        click.option("--expires", default=None, help="2027-01-01, an ISO date-time, or Unix seconds"),
        click.option("--allow-ip", "allow_ip", multiple=True, help="CIDR the key may be used from (repeatable)"),
        click.option("--role", default=None, type=click.Choice(["member", "admin"])),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _key_fields(options: dict[str, Any]) -> dict[str, Any]:
    from modelport.accounts.key_fields import fields_from_text

    allow_ip = options.pop("allow_ip", ())
    text = {k: (None if v is None else str(v)) for k, v in options.items()}
    text["allow_ip"] = ",".join(allow_ip) if allow_ip else None
    try:
        return fields_from_text(text)
    except ServiceError as exc:
        raise click.ClickException(exc.media_message) from exc


def _key_line(record: Any) -> str:
    limits = {k: v for k, v in record.to_public().items() if k in _LIMIT_NAMES and v is not None}
    shown = "  ".join(f"{k}={v}" for k, v in limits.items())
    return (
        f"{record.id}  {record.prefix}...  {'active' if record.active else 'revoked'}  {record.role}  {shown}".rstrip()
    )


_LIMIT_NAMES = ("name", "spend_limit_usd", "spend_limit_period", "models", "rpm", "tpm", "expires_at", "allowed_ips")


@key.command("create")
@click.argument("team_ref", metavar="TEAM")
@_key_limit_options
@click.option("--json", "as_json", is_flag=True)
def key_create(team_ref: str, as_json: bool, **options: Any) -> None:
    fields = _key_fields(options)
    created = _operate(_settings(), lambda op: op.create_key(team_ref, fields=fields))
    _emit(
        as_json,
        {
            "key": created.key,
            "id": created.record.id,
            "team": created.record.team_id,
            "prefix": created.record.prefix,
            **{k: v for k, v in created.record.to_public().items() if k in (*_LIMIT_NAMES, "role")},
        },
        f"{created.key}\n(key id {created.record.id}; this is the only time the key is shown)",
    )


@key.command("update")
@click.argument("key_id")
@_key_limit_options
@click.option("--json", "as_json", is_flag=True)
def key_update(key_id: str, as_json: bool, **options: Any) -> None:
    """Change KEY_ID's name, limits or role (`--rpm none` clears a limit)."""
    fields = _key_fields(options)
    record = _operate(_settings(), lambda op: op.update_key(key_id, fields))
    _emit(as_json, record.to_public(), _key_line(record))


@key.command("revoke")
@click.argument("key_id")
@click.option("--json", "as_json", is_flag=True)
def key_revoke(key_id: str, as_json: bool) -> None:
    record = _operate(_settings(), lambda op: op.revoke_key(key_id))
    _emit(as_json, record.to_public(), f"revoked {record.id}")


@key.command("list")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def key_list(team_ref: str, as_json: bool) -> None:
    keys = _operate(_settings(), lambda op: op.list_keys(team_ref))
    _emit(
        as_json,
        {"keys": [k.to_public() for k in keys]},
        "\n".join(_key_line(k) for k in keys) or "(no keys)",
    )


@admin.command("topup")
@click.argument("team_ref", metavar="TEAM")
@click.argument("amount_usd")
@click.option("--note", default=None, help="Written into the ledger entry (default: top-up).")
@click.option("--json", "as_json", is_flag=True)
def topup(team_ref: str, amount_usd: str, note: str | None, as_json: bool) -> None:
    try:
        amount = Decimal(amount_usd)
    except ArithmeticError as exc:
        raise click.BadParameter(f"not a decimal amount: {amount_usd}") from exc
    result = _operate(_settings(), lambda op: op.topup(team_ref, amount, note=note))
    _emit(
        as_json,
        {"team": result.team.to_public(), "tier_changed": result.tier_changed},
        f"{result.team.name}: balance {result.team.available_usd} USD, tier {result.team.tier}",
    )


@admin.command("ledger")
@click.argument("team_ref", metavar="TEAM")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--before-id", type=int, default=None, help="Only entries older than this id (paging back).")
@click.option("--json", "as_json", is_flag=True)
def ledger_show(team_ref: str, limit: int, before_id: int | None, as_json: bool) -> None:
    """TEAM's ledger entries, newest first."""
    entries = _operate(_settings(), lambda op: op.ledger(team_ref, limit=limit, before_id=before_id))
    rows = [e.to_public() for e in entries]
    _emit(
        as_json,
        {"entries": rows},
        "\n".join(f"{r['id']}  {r['kind']:<12} {r['amount_usd']:>14} USD  {r['note'] or r['ref'] or ''}" for r in rows)
        or "(no entries)",
    )


@admin.group()
def tier() -> None:
    """Tiers."""


@tier.command("set")
@click.argument("team_ref", metavar="TEAM")
@click.argument("tier_name", metavar="TIER")
@click.option("--json", "as_json", is_flag=True)
def tier_set(team_ref: str, tier_name: str, as_json: bool) -> None:
    settings = _settings()
    try:
        check_tier(settings.tiers, tier_name)
    except InvalidParameters as exc:
        raise click.BadParameter(exc.detail) from exc
    updated = _operate(settings, lambda op: op.set_tier(team_ref, tier_name))
    _emit(as_json, updated.to_public(), f"{updated.name} is now on tier {updated.tier}")


@admin.group()
def logs() -> None:
    """Request logs."""


def _iso_ms(value: str, param: str) -> int:
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        raise click.BadParameter(
            f"{value!r} is not an ISO 8601 time (e.g. 2026-01-31T00:00:00Z)", param_hint=param
        ) from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)  # times without a zone are UTC, like the log's days
    return int(parsed.timestamp() * 1000)


@logs.command("export")
@click.option("--team", "team_ref", required=True, metavar="TEAM")
@click.option("--since", required=True, help="ISO 8601 time, inclusive (UTC when no zone is given).")
@click.option("--until", required=True, help="ISO 8601 time, exclusive.")
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="File (default stdout); .gz is gzipped.",
)
def logs_export(team_ref: str, since: str, until: str, out: Path | None) -> None:
    """Stream TEAM's request log rows in [since, until) as JSON lines, oldest first (the archive's format)."""
    from modelport.accounts.service import get_team
    from modelport.retention.export import export_lines

    since_ms, until_ms = _iso_ms(since, "--since"), _iso_ms(until, "--until")
    if until_ms <= since_ms:
        raise click.BadParameter("--until must be after --since", param_hint="--until")
    settings = _settings()

    async def action(engine: Any) -> int:
        team_id = (await get_team(engine, team_ref)).id
        count = 0
        with _output(out) as sink:
            async for line in export_lines(engine, team_id, since_ms, until_ms):
                sink.write(line)
                count += 1
        return count

    count = _run_db(settings, action)
    if out is not None:
        click.echo(f"exported {count} rows to {out}", err=True)


@contextlib.contextmanager
def _output(out: Path | None) -> Iterator[BinaryIO]:
    if out is None:
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    with gzip.open(out, "wb") if out.suffix == ".gz" else out.open("wb") as sink:
        yield cast(BinaryIO, sink)


@admin.command("prune")
@click.option("--json", "as_json", is_flag=True, help="Print the run's report as JSON.")
def prune(as_json: bool) -> None:
    """Run one retention pruning run now, with the windows `serve` uses (MODELPORT_RETENTION__*): expired
    request log rows (archived first when archiving is on), old payloads, expired finished tasks with their
    webhook rows, old audit events. Exits 1 when another process is pruning at the time."""
    from modelport.media.files.storage.factory import build_store
    from modelport.retention.pruner import RunReport, build_pruner

    settings = _settings()

    async def action(engine: Any) -> RunReport | None:
        store = build_store(settings.files, settings.data_dir)
        try:
            pruner = build_pruner(
                engine, settings.retention, lock_file=settings.data_dir / "retention.lock", archive_store=store
            )
            return await pruner.run_once()
        finally:
            await store.aclose()

    report = _run_db(settings, action)
    if report is None:
        raise click.ClickException("another process is pruning now (it holds the pruner lock); try again later")
    data = {
        "removed": report.removed,
        "archive_files": report.archive_files,
        "seconds": round(report.seconds, 3),
        "phases": {name: round(seconds, 3) for name, seconds in report.phases.items()},
    }
    removed = ", ".join(f"{table} {rows}" for table, rows in report.removed.items() if rows) or "nothing"
    _emit(as_json, data, f"removed {removed} in {report.seconds:.1f} s")


@admin.command("backup")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option("--with-files", is_flag=True, help="Also copy the local media file store (and the secret key).")
def backup(path: Path, with_files: bool) -> None:
    """Copy the SQLite database (online, while serving) into the new directory PATH, a ready data directory.

    PostgreSQL is backed up with its own tools (pg_dump or a base backup): see docs/deploy.md."""
    from modelport.storage.backup import backup_sqlite

    settings = _settings()
    if not settings.is_sqlite:
        raise click.ClickException(
            "the database is PostgreSQL: back it up with pg_dump or a base backup (docs/deploy.md)"
        )
    if path.exists() and any(path.iterdir()):
        raise click.ClickException(f"{path} exists and is not empty")
    source = Path(make_url(settings.effective_database_url).database or "")
    path.mkdir(parents=True, exist_ok=True)
    try:
        backup_sqlite(source, path / "modelport.db")
    except (OSError, sqlite3.Error, RuntimeError) as exc:
        raise click.ClickException(f"backup failed: {exc}") from exc
    click.echo(f"database copied to {path / 'modelport.db'}")
    secret = settings.data_dir / "secret_key"
    if secret.is_file():
        shutil.copy2(secret, path / "secret_key")
    if with_files:
        if settings.files.backend != "local":
            raise click.ClickException("the file store is S3: keep it with bucket versioning (docs/deploy.md)")
        root = settings.files.local_dir or settings.data_dir / "media"
        if root.is_dir():
            # Files after the database: every file a row of the copy names was there before the copy began.
            shutil.copytree(root, path / "media", ignore=shutil.ignore_patterns(".*.part"))
        click.echo(f"files copied to {path / 'media'}")
