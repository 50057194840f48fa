"""Shared fixtures. `engine` runs a test once on SQLite and once on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support import conformance_data
from tests.support.databases import BACKENDS, migrated_engine

_left_out: list[Path] = []


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
