"""Conformance tests read recorded real traffic and published specs from ../shared/conformance.

Under CI=true a missing folder fails the run (a silently skipped conformance suite proves nothing); in a
plain clone without it, tests/conftest.py leaves these files out and says so in one line
(tests/support/conformance_data.py).
Loading helpers live in tests/support/cassettes.py and tests/support/openapi_schema.py.
"""

from __future__ import annotations

import pytest

from tests.support.cassettes import CONFORMANCE_DIR


@pytest.fixture(scope="session", autouse=True)
def _conformance_data_present() -> None:
    assert CONFORMANCE_DIR.is_dir(), f"conformance data not found at {CONFORMANCE_DIR.resolve()}"
