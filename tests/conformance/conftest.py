"""Conformance tests read recorded real traffic and published specs from ../shared/conformance.

They fail (not skip) when that folder is missing: a silently skipped conformance suite proves nothing.
Loading helpers live in tests/support/cassettes.py and tests/support/openapi_schema.py.
"""

from __future__ import annotations

import pytest

from tests.support.cassettes import CONFORMANCE_DIR


@pytest.fixture(scope="session", autouse=True)
def _conformance_data_present() -> None:
    assert CONFORMANCE_DIR.is_dir(), f"conformance data not found at {CONFORMANCE_DIR.resolve()}"
