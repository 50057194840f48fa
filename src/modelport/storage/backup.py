"""`modelport admin backup`: a consistent copy of an SQLite database while the service serves it.

SQLite's online backup API (`sqlite3.Connection.backup`) copies the pages a few hundred at a time inside
read transactions; pages a writer changes meanwhile are copied again, so the copy is the database as of
one moment, whatever the writers did. A plain file copy of a database in WAL mode is not: it can miss the
WAL or catch a half-written page. Writers are never blocked for longer than one step.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

PAGES_PER_STEP = 1024  # 4 MB at 4 KB pages


def backup_sqlite(source: Path, target: Path, *, pause_seconds: float = 0.005) -> None:
    """Copy the live database `source` to `target` (which must not exist yet)."""
    if not source.is_file():
        raise FileNotFoundError(f"no database at {source}")
    if target.exists():
        raise FileExistsError(f"{target} already exists")
    src = sqlite3.connect(source, timeout=30)
    partial = target.with_name(target.name + ".partial")
    partial.unlink(missing_ok=True)
    dst = sqlite3.connect(partial)
    try:
        src.backup(dst, pages=PAGES_PER_STEP, sleep=pause_seconds)
        problem = dst.execute("PRAGMA integrity_check").fetchone()[0]
        if problem != "ok":
            raise RuntimeError(f"the copy failed its integrity check: {problem}")
        # A plain rollback-journal file: nothing beside it is needed to open it.
        dst.execute("PRAGMA journal_mode=DELETE")
    finally:
        dst.close()
        src.close()
    partial.rename(target)
