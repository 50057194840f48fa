"""Progress of the long commands (`process/cli/progress.py`): drawn on a terminal (done/total, rate, time
left), nothing at all under `--json` or when stdout or stderr is not a terminal."""

from __future__ import annotations

import io

from modelport.process.cli.progress import TerminalProgress, progress_for, shows_progress
from modelport.progress import Quiet


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_terminal_shows_done_of_total_percent_and_rate() -> None:
    out, err = FakeTerminal(), FakeTerminal()
    with progress_for("pruning request logs", quiet=False, stdout=out, stderr=err) as progress:
        assert isinstance(progress, TerminalProgress)
        progress.start(10)
        progress.advance(3)
        progress.advance(7)
    drawn = err.getvalue()
    assert "pruning request logs" in drawn
    assert "3/10" in drawn and "10/10" in drawn
    assert "100%" in drawn
    assert "rows/s" in drawn
    assert out.getvalue() == ""  # the command's own output stays clean


def test_an_unknown_total_still_counts() -> None:
    out, err = FakeTerminal(), FakeTerminal()
    with progress_for("exporting", quiet=False, stdout=out, stderr=err) as progress:
        progress.advance(5)
    assert "5" in err.getvalue()


def test_json_or_no_terminal_prints_nothing() -> None:
    tty, pipe = FakeTerminal(), io.StringIO()
    assert not shows_progress(quiet=True, stdout=tty, stderr=tty)
    assert not shows_progress(quiet=False, stdout=pipe, stderr=tty)
    assert not shows_progress(quiet=False, stdout=tty, stderr=pipe)
    assert shows_progress(quiet=False, stdout=tty, stderr=tty)
    for out, err, quiet in ((tty, tty, True), (pipe, tty, False), (tty, pipe, False)):
        with progress_for("migrating", quiet=quiet, stdout=out, stderr=err) as progress:
            assert isinstance(progress, Quiet)
            progress.start(3)
            progress.advance(3)
    assert tty.getvalue() == "" and pipe.getvalue() == ""


def test_the_rate_and_the_time_left_follow_the_clock() -> None:
    now = [100.0]
    err = FakeTerminal()
    shown = TerminalProgress("pruning request logs", "rows", err, clock=lambda: now[0])
    shown.start(10_000)
    now[0] += 10.0
    shown.advance(1_000)  # 100 rows/s, 9,000 to go: 90 s
    shown.finish()
    assert "1000/10000" in err.getvalue()
    assert "100 rows/s, 0:01:30 left" in err.getvalue()
