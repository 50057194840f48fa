"""How long work reports its progress to whoever shows it (the CLI draws it on a terminal: `process/cli/progress.py`).

The work calls `start(total)` once it knows how much there is (None: unknown), then `advance(done)` as it
goes. `NO_PROGRESS` is the default: the serving processes' own runs (the pruner's interval) report to nobody.
"""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    def start(self, total: int | None) -> None: ...

    def advance(self, done: int = 1) -> None: ...


class Quiet:
    """Reports to nobody."""

    def start(self, total: int | None) -> None:
        pass

    def advance(self, done: int = 1) -> None:
        pass


NO_PROGRESS: Progress = Quiet()
