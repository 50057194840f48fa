"""Shared fixtures and the suite's scheduling. `engine` runs a test once on SQLite and once on PostgreSQL.

Scheduling under pytest-xdist (`scripts/test.sh` runs `-n 3 --dist loadgroup`): every integration or
conformance module is one xdist group, so its module-scoped servers start once, on one worker; tests marked
`heavy` (CPU-bound: renders, fuzzing, real CLIs, a browser) share one group, so no two of them run at once;
tests marked `serial` (timing-sensitive) run in a stage of their own, beside the parallel one at a higher CPU
priority. The groups go out to the workers heavy first, then the long ones, then by size
(`schedule.group_order`). Which tests are heavy, long or serial, and why, is tests/support/schedule.py. A test
that times out (pytest-timeout) fails with the stacks of the modelport processes this test process started.
"""

from __future__ import annotations

import os
import threading
from collections.abc import AsyncIterator, Generator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support import conformance_data, schedule, server
from tests.support.cpu_report import CpuRecorder
from tests.support.databases import BACKENDS, drop_templates, migrated_engine
from tests.support.stacks import modelport_stacks

_left_out: list[Path] = []
_cpu = CpuRecorder() if os.environ.get("MODELPORT_TEST_CPU_REPORT", "1") != "0" else None


def pytest_configure(config: pytest.Config) -> None:
    if conformance_data.required() and not conformance_data.present():
        raise pytest.UsageError(
            f"conformance data not found at {conformance_data.CONFORMANCE_DIR} (CI=true needs it; "
            "MODELPORT_CONFORMANCE_DIR names another folder)"
        )


def pytest_ignore_collect(collection_path: Path, config: pytest.Config) -> bool | None:
    """Without the conformance folder (a plain clone), leave out the test files that read it."""
    if conformance_data.present() or not conformance_data.needs_data(collection_path):
        return None
    _left_out.append(collection_path)
    return True


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups (its own hook is a plain one)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    root = config.rootpath
    for item in items:
        if schedule.is_serial(item.nodeid):
            item.add_marker(pytest.mark.serial)
            continue
        if schedule.is_heavy(item.nodeid) or item.get_closest_marker("heavy") is not None:
            item.add_marker(pytest.mark.heavy)
            item.add_marker(pytest.mark.xdist_group(schedule.HEAVY_GROUP))
            continue
        path = Path(item.path)
        relative = path.relative_to(root) if path.is_relative_to(root) else path
        if relative.parts[:2] in (("tests", "integration"), ("tests", "conformance")):
            item.add_marker(pytest.mark.xdist_group(relative.as_posix()))
    # The order the groups go out to the workers (schedule.group_order); a stable sort keeps the shuffled
    # order (pytest-randomly's, made before this hook) within each group and among equals.
    keys = dict(zip((id(item) for item in items), schedule.group_order([_group(item) for item in items]), strict=True))
    items.sort(key=lambda item: keys[id(item)])


def _group(item: pytest.Item) -> str | None:
    marker = item.get_closest_marker("xdist_group")
    return str(marker.args[0]) if marker is not None and marker.args else None


# The stacks are taken shortly before pytest-timeout fires: its signal unwinds the test, and a server the
# test started in a `with` block is stopped before any report hook runs.
_STACKS_AHEAD_SECONDS = 20.0
_early_stacks = pytest.StashKey[str]()
_stack_timer = pytest.StashKey[threading.Timer]()


def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """Beside pytest-timeout's own timer (returning None lets its hook run too)."""
    timeout = float(settings.timeout or 0)
    if timeout <= 0:
        return

    def take() -> None:
        item.stash[_early_stacks] = modelport_stacks()

    timer = threading.Timer(max(timeout - _STACKS_AHEAD_SECONDS, timeout * 0.8), take)
    timer.daemon = True
    timer.name = f"modelport stacks before the timeout of {item.nodeid}"
    item.stash[_stack_timer] = timer
    timer.start()


def pytest_timeout_cancel_timer(item: pytest.Item) -> None:
    timer = item.stash.get(_stack_timer, None)
    if timer is not None:
        timer.cancel()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    report = yield
    if report.failed and "Timeout (>" in report.longreprtext:
        stacks = item.stash.get(_early_stacks, None) or modelport_stacks()
        report.sections.append(("modelport processes shortly before the timeout", stacks))
        # CI keeps the end of a run's output: scripts/test.sh prints these files last.
        out = Path("test-artifacts") / "timeouts"
        out.mkdir(parents=True, exist_ok=True)
        name = "".join(c if c.isalnum() or c in "-_." else "_" for c in item.nodeid)[-150:]
        (out / f"{name}.txt").write_text(f"{item.nodeid}\n{report.longreprtext[-4000:]}\n{stacks}")
    return report


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    if _cpu is None:
        return (yield)
    _cpu.start()
    try:
        return (yield)
    finally:
        _cpu.stop(item.nodeid)


def pytest_sessionfinish(session: pytest.Session) -> None:
    drop_templates()
    if _cpu is not None and _cpu.files:
        _cpu.write(os.environ.get("PYTEST_XDIST_WORKER", "main"), server.starts)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _left_out:
        terminalreporter.write_line(
            f"NOT RUN: {len(_left_out)} test files that read recorded exchanges: no conformance data at "
            f"{conformance_data.CONFORMANCE_DIR} (set MODELPORT_CONFORMANCE_DIR to run them)",
            yellow=True,
        )


@pytest.fixture(params=BACKENDS)
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with migrated_engine(request.param, tmp_path) as eng:
        yield eng
