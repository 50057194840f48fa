"""Progress of a long command (`migrate`, `admin prune`, `admin backup`, `admin logs export`) on a terminal.

Drawn on stderr with click's progress bar (done/total, percent; rate and time left beside it) only when both stdout and
stderr are terminals and the command was not asked for `--json`; otherwise nothing is printed, so scripts,
cron jobs and pipes read only the command's own output. The work reports through `modelport.progress.Progress`.
"""

from __future__ import annotations

import itertools
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import IO, Any, TextIO, cast

import click

from modelport.progress import Progress, Quiet


class TerminalProgress:
    def __init__(self, label: str, unit: str, stream: IO[str], *, clock: Callable[[], float] = time.monotonic) -> None:
        self._label, self._unit, self._stream, self._clock = label, unit, stream, clock
        self._bar: Any = None
        self._done = 0
        self._total: int | None = None
        self._started = clock()

    def start(self, total: int | None) -> None:
        self.finish()
        self._done, self._total, self._started = 0, total, self._clock()
        self._bar = click.progressbar(
            None if total is not None else itertools.count(),  # unknown total: click needs an iterable
            length=total,
            label=self._label,
            file=cast(TextIO, self._stream),
            show_eta=False,  # `_rate` says the time left, from the first step on (click waits a second)
            show_percent=total is not None,
            show_pos=True,
            item_show_func=self._rate,
        ).__enter__()

    def advance(self, done: int = 1) -> None:
        if self._bar is None:
            self.start(None)
        self._done += done
        self._bar.update(done)

    def _rate(self, _item: int | None) -> str:
        """`1,234 rows/s, 0:05:12 left` (the time left once the total is known and work has been done)."""
        elapsed = self._clock() - self._started
        if elapsed <= 0 or self._done <= 0:
            return ""
        rate = self._done / elapsed
        shown = f"{rate:,.0f} {self._unit}/s"
        if self._total is not None and self._done < self._total:
            left = int((self._total - self._done) / rate)
            shown += f", {left // 3600}:{left // 60 % 60:02d}:{left % 60:02d} left"
        return shown

    def finish(self) -> None:
        bar, self._bar = self._bar, None
        if bar is not None:
            bar.__exit__(None, None, None)


def shows_progress(*, quiet: bool, stdout: IO[str] | None = None, stderr: IO[str] | None = None) -> bool:
    out, err = stdout or sys.stdout, stderr or sys.stderr
    return not quiet and _isatty(out) and _isatty(err)


def _isatty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # closed, or not a file
        return False


@contextmanager
def progress_for(
    label: str,
    unit: str = "rows",
    *,
    quiet: bool = False,
    stdout: IO[str] | None = None,
    stderr: IO[str] | None = None,
) -> Iterator[Progress]:
    """A progress display for one command: drawn when `shows_progress`, else `Quiet`."""
    if not shows_progress(quiet=quiet, stdout=stdout, stderr=stderr):
        yield Quiet()
        return
    shown = TerminalProgress(label, unit, stderr or sys.stderr)
    try:
        yield shown
    finally:
        shown.finish()
