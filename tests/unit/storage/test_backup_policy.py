"""`admin backup`'s policy (`storage/backup.py`): SQLite only, into an empty directory, the database first and
its progress counted in pages; the secret key beside it; local media files only."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest

from modelport.settings import Settings
from modelport.storage import backup


class Recorded:
    def __init__(self) -> None:
        self.total: int | None = None
        self.done = 0

    def start(self, total: int | None) -> None:
        self.total = total

    def advance(self, done: int = 1) -> None:
        self.done += done


@pytest.fixture(autouse=True)
def _no_modelport_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in os.environ:
        if name.startswith("MODELPORT_"):
            monkeypatch.delenv(name)


def _database(data_dir: Path) -> None:
    data_dir.mkdir(exist_ok=True)
    with sqlite3.connect(data_dir / "modelport.db") as conn:
        conn.execute("CREATE TABLE t (x TEXT)")
        conn.executemany("INSERT INTO t VALUES (?)", [("x" * 500,) for _ in range(20_000)])


def test_the_copy_reports_every_page(tmp_path: Path) -> None:
    settings = Settings(data_dir=tmp_path / "data")
    _database(settings.data_dir)
    (settings.data_dir / "secret_key").write_text("k")
    progress = Recorded()
    target = tmp_path / "copy"
    backup.check_target(settings, target)
    copy = backup.copy_database(settings, target, progress=progress)
    backup.copy_secret_key(settings, target)
    assert progress.total is not None and progress.total > backup.PAGES_PER_STEP
    assert progress.done == progress.total
    with sqlite3.connect(copy) as conn:
        assert conn.execute("SELECT count(*) FROM t").fetchone()[0] == 20_000
    assert (target / "secret_key").read_text() == "k"


def test_postgresql_a_full_directory_and_s3_files_are_refused(tmp_path: Path) -> None:
    with pytest.raises(backup.BackupRefused, match="PostgreSQL"):
        backup.check_target(Settings(data_dir=tmp_path, database_url="postgresql+asyncpg://u@h/db"), tmp_path)
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("")
    with pytest.raises(backup.BackupRefused, match="not empty"):
        backup.check_target(Settings(data_dir=tmp_path), tmp_path / "full")
    s3 = Settings.model_validate({"data_dir": tmp_path, "files": {"backend": "s3"}})
    with pytest.raises(backup.BackupRefused, match="S3"):
        backup.copy_media_files(s3, tmp_path / "out")
