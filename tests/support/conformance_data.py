"""Where the recorded exchanges and published specs live, and which test files need them.

The folder is `../shared/conformance` beside the checkout in CI; `MODELPORT_CONFORMANCE_DIR` names another.
A plain clone has no such folder: its test files that read it are left out with one visible line, except
under `CI=true`, where a missing folder fails the run (a silently skipped conformance suite proves nothing).
"""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CONFORMANCE_DIR = Path(os.environ.get("MODELPORT_CONFORMANCE_DIR") or REPO_ROOT / ".." / "shared" / "conformance")

# A test module needs the folder when it imports one of these (each reads the folder, some at import time).
_READERS = (
    "tests.support.cassettes",
    "tests.support.openapi_schema",
    "tests.support.replay_upstream",
    "client_shapes",
    "replay_gateway",
)


def present() -> bool:
    return CONFORMANCE_DIR.is_dir()


def required() -> bool:
    """CI must have the folder; elsewhere its absence only leaves those tests out."""
    return os.environ.get("CI", "").lower() == "true"


def needs_data(path: Path) -> bool:
    """Does this test module (or conftest) read the conformance folder?"""
    if path.suffix != ".py" or path.parent.name == "support":
        return False
    try:
        text = path.read_text(encoding="utf-8")
    except OSError:
        return False
    return any(reader in text for reader in _READERS)
