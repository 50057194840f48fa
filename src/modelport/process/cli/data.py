"""The data nouns of `modelport admin`: `logs export`, `prune` and `backup` (its policy: `storage/backup.py`).

Each shows its progress on a terminal (`progress.py`) and nothing else when it is not one, or under `--json`.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import gzip
import sqlite3
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO, cast

import click

from modelport.process.cli.common import emit, load, run_db
from modelport.process.cli.progress import progress_for


@click.group()
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
    """Stream TEAM's request log rows in [since, until) as JSON lines, oldest first (the archive's format).

    With --out, the progress shows on a terminal; on stdout the rows are the output."""
    from modelport.accounts.service import get_team
    from modelport.retention.export import count_lines, export_lines

    since_ms, until_ms = _iso_ms(since, "--since"), _iso_ms(until, "--until")
    if until_ms <= since_ms:
        raise click.BadParameter("--until must be after --since", param_hint="--until")
    settings = load()

    with progress_for("exporting", quiet=out is None) as progress:

        async def action(engine: Any) -> int:
            team_id = (await get_team(engine, team_ref)).id
            if out is not None:
                progress.start(await count_lines(engine, team_id, since_ms, until_ms))
            count = 0
            with _output(out) as sink:
                async for line in export_lines(engine, team_id, since_ms, until_ms):
                    sink.write(line)
                    count += 1
                    progress.advance(1)
            return count

        count = run_db(settings, action)
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


@click.command("prune")
@click.option("--json", "as_json", is_flag=True, help="Print the run's report as JSON.")
def prune(as_json: bool) -> None:
    """Run one retention pruning run now, with the windows `serve` uses (MODELPORT_RETENTION__*): expired
    request log rows (archived first when archiving is on), old payloads, expired finished tasks with their
    webhook rows, old audit events. Exits 1 when another process is pruning at the time."""
    from modelport.media.files.storage.factory import build_store
    from modelport.retention.pruner import RunReport, build_pruner

    settings = load()

    with progress_for("pruning request logs", quiet=as_json) as progress:

        async def action(engine: Any) -> RunReport | None:
            store = build_store(settings.files, settings.data_dir)
            try:
                pruner = build_pruner(
                    engine, settings.retention, lock_file=settings.data_dir / "retention.lock", archive_store=store
                )
                return await pruner.run_once(progress=progress)
            finally:
                await store.aclose()

        report = run_db(settings, action)
    if report is None:
        raise click.ClickException("another process is pruning now (it holds the pruner lock); try again later")
    data = {
        "removed": report.removed,
        "archive_files": report.archive_files,
        "seconds": round(report.seconds, 3),
        "phases": {name: round(seconds, 3) for name, seconds in report.phases.items()},
    }
    removed = ", ".join(f"{table} {rows}" for table, rows in report.removed.items() if rows) or "nothing"
    emit(as_json, data, f"removed {removed} in {report.seconds:.1f} s")


@click.command("backup")
@click.argument("path", type=click.Path(file_okay=False, path_type=Path))
@click.option("--with-files", is_flag=True, help="Also copy the local media file store (and the secret key).")
def backup(path: Path, with_files: bool) -> None:
    """Copy the SQLite database (online, while serving) into the new directory PATH, a ready data directory.

    PostgreSQL is backed up with its own tools (pg_dump or a base backup): see docs/deploy.md."""
    from modelport.storage import backup as policy

    settings = load()
    try:
        policy.check_target(settings, path)
        with progress_for("copying the database", "pages") as progress:
            try:
                database = policy.copy_database(settings, path, progress=progress)
            except (OSError, sqlite3.Error, RuntimeError) as exc:
                raise click.ClickException(f"backup failed: {exc}") from exc
        click.echo(f"database copied to {database}")
        policy.copy_secret_key(settings, path)
        if with_files:
            click.echo(f"files copied to {policy.copy_media_files(settings, path)}")
    except policy.BackupRefused as exc:
        raise click.ClickException(str(exc)) from exc
