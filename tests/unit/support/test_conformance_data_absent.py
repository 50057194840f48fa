"""A plain clone without ../shared/conformance: those tests are left out with one visible line; CI fails."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.conformance_data import REPO_ROOT

# One file per kind of reader: a conformance test, a gateway replay test, the unit tests of core (one reads SSE files).
_TARGETS = ["tests/conformance", "tests/integration/conformance_gateway", "tests/unit/core"]


def _collect(tmp_path: Path, ci: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MODELPORT_CONFORMANCE_DIR": str(tmp_path / "absent"), "CI": ci}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", *_TARGETS],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_missing_folder_leaves_those_tests_out_with_one_line(tmp_path: Path) -> None:
    run = _collect(tmp_path, ci="")
    assert run.returncode == 0, run.stdout + run.stderr
    assert not re.search(r"\d+ errors?\b|ERROR collecting", run.stdout)
    assert "NOT RUN:" in run.stdout and str(tmp_path / "absent") in run.stdout
    # Files that read the folder are left out; the ones that do not still run.
    for reader in ("test_anthropic_streams.py", "test_fast_path_replay.py", "test_core_sse.py"):
        assert reader not in run.stdout
    assert "test_openai_chat_validation.py::" in run.stdout


def test_missing_folder_fails_under_ci(tmp_path: Path) -> None:
    run = _collect(tmp_path, ci="true")
    assert run.returncode not in (0, 5), run.stdout + run.stderr
    assert "conformance data not found" in run.stdout + run.stderr
