"""Shared fixtures. `engine` runs a test once on SQLite and once on PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.support.databases import BACKENDS, migrated_engine


@pytest.fixture(params=BACKENDS)
async def engine(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AsyncEngine]:
    async with migrated_engine(request.param, tmp_path) as eng:
        yield eng
