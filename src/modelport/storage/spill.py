"""Overflow of queued rows (log rows, settlements) to local disk while the database cannot take them.

Each writer appends JSON lines to its own file (`spill-<pid>-<random>.jsonl`) and holds an exclusive
`flock` on it while it is open. Any process may replay a file it can lock: files of this process once
sealed, and files left by a process that died. Replay re-inserts with ON CONFLICT DO NOTHING, so replaying
a file twice (two processes racing, or a crash mid-replay) is harmless as long as the writer's batch write
is idempotent (both are: log rows by request id, settlements by their key); a file is deleted only after
all of its rows are in the database.

Appends are written through to the OS (they survive the process being killed, not a power cut). The file
I/O is synchronous: small appends while the database is down, and reads of one batch at a time.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import secrets
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import IO, Any, Generic, TypeVar

T = TypeVar("T")
log = logging.getLogger("modelport.storage.spill")
_PATTERN = "spill-*.jsonl"


def _try_lock(handle: IO[str]) -> bool:
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


class SpillFile(Generic[T]):
    """The spill directory as seen by one writer; rows go to disk as `to_row(item)` JSON objects."""

    def __init__(
        self, directory: Path, to_row: Callable[[T], dict[str, Any]], from_row: Callable[[dict[str, Any]], T]
    ) -> None:
        self.directory = directory
        self._to_row = to_row
        self._from_row = from_row
        self._active: IO[str] | None = None
        self._active_rows = 0

    @property
    def active_rows(self) -> int:
        """Rows appended to this writer's open file (not yet sealed for replay)."""
        return self._active_rows

    def append(self, records: Iterable[T]) -> int:
        handle = self._open_active()
        lines = [json.dumps(self._to_row(r), separators=(",", ":")) + "\n" for r in records]
        handle.write("".join(lines))
        handle.flush()
        self._active_rows += len(lines)
        return len(lines)

    def seal(self) -> None:
        """Close this writer's file (releasing its lock) so that it can be replayed."""
        if self._active is not None:
            self._active.close()
            self._active = None
            self._active_rows = 0

    def claim(self) -> Iterator[ClaimedSpill[T]]:
        """Files nobody else holds, oldest first, each locked while the caller replays it."""
        if not self.directory.is_dir():
            return
        paths = sorted(self.directory.glob(_PATTERN), key=lambda p: p.stat().st_mtime if p.exists() else 0)
        for path in paths:
            if self._active is not None and Path(self._active.name) == path:
                continue
            try:
                handle = path.open("r", encoding="utf-8")
            except FileNotFoundError:
                continue  # replayed and removed by another process meanwhile
            if not _try_lock(handle):
                handle.close()
                continue
            claimed = ClaimedSpill(path, handle, self._from_row)
            try:
                yield claimed
            finally:
                claimed.release()

    def _open_active(self) -> IO[str]:
        if self._active is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            path = self.directory / f"spill-{os.getpid()}-{secrets.token_hex(4)}.jsonl"
            handle = path.open("a", encoding="utf-8")
            _try_lock(handle)  # a fresh unique name: nobody else can hold it
            self._active = handle
        return self._active


class ClaimedSpill(Generic[T]):
    """A locked spill file being replayed."""

    def __init__(self, path: Path, handle: IO[str], from_row: Callable[[dict[str, Any]], T]) -> None:
        self.path = path
        self._handle = handle
        self._from_row = from_row

    def batches(self, size: int) -> Iterator[list[T]]:
        batch: list[T] = []
        for number, line in enumerate(self._handle, start=1):
            try:
                batch.append(self._from_row(json.loads(line)))
            except (ValueError, TypeError):
                # Only a line cut short by a crash mid-append can be malformed.
                log.warning("skipping malformed line %d of %s", number, self.path)
                continue
            if len(batch) >= size:
                yield batch
                batch = []
        if batch:
            yield batch

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)

    def release(self) -> None:
        if not self._handle.closed:
            self._handle.close()
