"""Archive before delete (issue 23 item 3), on SQLite and PostgreSQL: rows leave only after their archive
file was written and read back whole; a store that loses or garbles the file deletes nothing."""

from __future__ import annotations

import gzip
import json
from collections.abc import AsyncIterable, AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy import func, select

from modelport.accounts import service as accounts
from modelport.media.files.storage.local import LocalFileStore
from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import insert_logs
from modelport.requestlog.tables import request_log_counts, request_logs
from modelport.retention.archive import ArchiveMismatch
from modelport.retention.logs import LogPruning, prune_logs
from modelport.retention.pacing import Pacing
from tests.support.databases import BACKENDS, migrated_engine

DAY_MS = 86_400_000
NOW_MS = 1_800_000_000_000
TEN = Pacing(batch_rows=10, pause_seconds=0, busy_share=1.0)


class GarblingStore(LocalFileStore):
    """Stores every object with its last byte dropped, as a failing disk or bucket might."""

    async def put_stream(self, key: str, chunks: AsyncIterable[bytes]) -> int:
        async def cut() -> AsyncIterator[bytes]:
            data = b"".join([c async for c in chunks])
            yield data[:-1]

        return await super().put_stream(key, cut())


def rows(team_id: str) -> list[LogRecord]:
    # Three days ago (two UTC days apart) and one fresh row.
    at = [NOW_MS - 3 * DAY_MS, NOW_MS - 3 * DAY_MS + 5, NOW_MS - 4 * DAY_MS, NOW_MS - 1000]
    return [
        LogRecord(f"req_{i}", team_id, ms, "success", "p", "m", "chat.completions", svc_user_id="u1")
        for i, ms in enumerate(at)
    ]


@pytest.mark.parametrize("backend", BACKENDS)
async def test_rows_leave_only_after_a_verified_archive(backend: str, tmp_path: Path) -> None:
    async with migrated_engine(backend, tmp_path) as engine:
        team = await accounts.create_team(engine, "archived", tier="free")
        await insert_logs(engine, rows(team.id))

        async def left() -> tuple[int, int]:
            async with engine.connect() as conn:
                n = await conn.scalar(select(func.count()).select_from(request_logs))
                counted = await conn.scalar(
                    select(func.coalesce(func.sum(request_log_counts.c.n), 0)).where(
                        request_log_counts.c.svc_user_id == ""
                    )
                )
            return int(n or 0), int(counted or 0)

        garbled = LogPruning(default_days=1, pacing=TEN, archive=GarblingStore(tmp_path / "bad"))
        with pytest.raises(ArchiveMismatch):
            await prune_logs(engine, garbled, NOW_MS)
        assert await left() == (4, 4)  # nothing deleted

        good = LogPruning(default_days=1, pacing=TEN, archive=LocalFileStore(tmp_path / "good"))
        pruned = await prune_logs(engine, good, NOW_MS)
        assert pruned.rows == 3 and pruned.archive_files == 2  # two UTC days
        assert await left() == (1, 1)  # the counts follow the rows
        files = sorted((tmp_path / "good" / "archive" / "request_logs" / team.id).rglob("*.jsonl.gz"))
        archived = [json.loads(line) for f in files for line in gzip.decompress(f.read_bytes()).splitlines()]
        assert sorted(r["id"] for r in archived) == ["req_0", "req_1", "req_2"]
        assert {f.parent.name for f in files} == {"2027-01-11", "2027-01-12"}
