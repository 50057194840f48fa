"""`modelport admin backup`: a consistent copy of an SQLite database while the service serves it, and the
policy of what a backup holds (the database, the secret key, with `--with-files` the local media files).

SQLite's online backup API (`sqlite3.Connection.backup`) copies the pages a few hundred at a time inside
read transactions; pages a writer changes meanwhile are copied again, so the copy is the database as of
one moment, whatever the writers did. A plain file copy of a database in WAL mode is not: it can miss the
WAL or catch a half-written page. Writers are never blocked for longer than one step.
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from sqlalchemy.engine import make_url

from modelport.progress import NO_PROGRESS, Progress
from modelport.settings import Settings

PAGES_PER_STEP = 1024  # 4 MB at 4 KB pages


class BackupRefused(Exception):
    """This deployment's data is not backed up by `admin backup`: the message says what to use instead."""


def check_target(settings: Settings, target: Path) -> None:
    """Only an SQLite database is copied, into a new or empty directory."""
    if not settings.is_sqlite:
        raise BackupRefused("the database is PostgreSQL: back it up with pg_dump or a base backup (docs/deploy.md)")
    if target.exists() and any(target.iterdir()):
        raise BackupRefused(f"{target} exists and is not empty")


def copy_database(settings: Settings, target: Path, *, progress: Progress = NO_PROGRESS) -> Path:
    """The database into `target` (created), as `modelport.db`; returns its path."""
    source = Path(make_url(settings.effective_database_url).database or "")
    target.mkdir(parents=True, exist_ok=True)
    copy = target / "modelport.db"
    backup_sqlite(source, copy, progress=progress)
    return copy


def copy_secret_key(settings: Settings, target: Path) -> None:
    secret = settings.data_dir / "secret_key"
    if secret.is_file():
        shutil.copy2(secret, target / "secret_key")


def copy_media_files(settings: Settings, target: Path) -> Path:
    """The local media file store into `target/media`, after the database: every file a row of the copy
    names was there before the copy began. An S3 store is kept with bucket versioning instead."""
    if settings.files.backend != "local":
        raise BackupRefused("the file store is S3: keep it with bucket versioning (docs/deploy.md)")
    root = settings.files.local_dir or settings.data_dir / "media"
    if root.is_dir():
        shutil.copytree(root, target / "media", ignore=shutil.ignore_patterns(".*.part"))
    return target / "media"


def backup_sqlite(
    source: Path, target: Path, *, pause_seconds: float = 0.005, progress: Progress = NO_PROGRESS
) -> None:
    """Copy the live database `source` to `target` (which must not exist yet); `progress` counts pages."""
    if not source.is_file():
        raise FileNotFoundError(f"no database at {source}")
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    src = sqlite3.connect(source, timeout=30)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    dst = sqlite3.connect(partial)
    try:
        copied = [-1]

        def step(_status: int, remaining: int, total: int) -> None:
            if copied[0] < 0:
                progress.start(total)
                copied[0] = 0
            progress.advance(total - remaining - copied[0])
            copied[0] = total - remaining

        src.backup(dst, pages=PAGES_PER_STEP, progress=None if progress is NO_PROGRESS else step, sleep=pause_seconds)
        problem = dst.execute("PRAGMA integrity_check").fetchone()[0]
        if problem != "ok":
            raise RuntimeError(f"the copy failed its integrity check: {problem}")
        # A plain rollback-journal file: nothing beside it is needed to open it.
        dst.execute("PRAGMA journal_mode=DELETE")
    finally:
        dst.close()
        src.close()
    partial.rename(target)
