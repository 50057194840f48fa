"""Spill files: appended by their writer, locked while open, replayable by anyone afterwards."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from modelport.requestlog.record import LogRecord
from modelport.storage.spill import SpillFile


def spill_file(directory: Path) -> SpillFile[LogRecord]:
    return SpillFile(directory, LogRecord.as_row, LogRecord.from_row)


def rec(i: int) -> LogRecord:
    return LogRecord(
        id=f"req_{i}",
        team_id="t",
        created_at_ms=i,
        status="success",
        provider="p",
        model_name="m",
        endpoint="chat",
        input='{"a": 1}',
    )


def test_open_file_is_not_claimed_sealed_file_is(tmp_path: Path) -> None:
    writer = spill_file(tmp_path)
    writer.append([rec(i) for i in range(5)])
    assert writer.active_rows == 5
    other = spill_file(tmp_path)
    assert list(other.claim()) == []  # locked by its writer
    writer.seal()
    claimed = list(other.claim())
    assert len(claimed) == 1


def test_replay_in_batches_then_remove(tmp_path: Path) -> None:
    spill = spill_file(tmp_path)
    spill.append([rec(i) for i in range(7)])
    spill.seal()
    for claimed in spill.claim():
        batches = list(claimed.batches(3))
        assert [len(b) for b in batches] == [3, 3, 1]
        assert [r.id for b in batches for r in b] == [f"req_{i}" for i in range(7)]
        assert batches[0][0] == rec(0)
        claimed.remove()
    assert list(tmp_path.iterdir()) == []


def test_torn_last_line_is_skipped(tmp_path: Path) -> None:
    spill = spill_file(tmp_path)
    spill.append([rec(1), rec(2)])
    spill.seal()
    path = next(tmp_path.iterdir())
    with path.open("a") as fh:
        fh.write('{"id": "req_3", "team_')
    rows = [r.id for claimed in spill.claim() for b in claimed.batches(10) for r in b]
    assert rows == ["req_1", "req_2"]


def test_file_of_a_dead_process_is_claimed(tmp_path: Path) -> None:
    # A process that appended and died without sealing: the kernel released its lock.
    script = textwrap.dedent(f"""
        from pathlib import Path
        from modelport.requestlog.record import LogRecord
        from modelport.storage.spill import SpillFile
        spill = SpillFile(Path({str(tmp_path)!r}), LogRecord.as_row, LogRecord.from_row)
        spill.append([LogRecord(id="req_dead", team_id="t", created_at_ms=1,
            status="success", provider="p", model_name="m", endpoint="chat")])
        import os; os._exit(0)
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    ids = [r.id for claimed in spill_file(tmp_path).claim() for b in claimed.batches(10) for r in b]
    assert ids == ["req_dead"]
