"""The failures printed last by scripts/test.sh: read back from a JUnit XML file pytest wrote."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support.failure_report import failures


def test_failed_and_erroring_cases_are_read_with_their_output(tmp_path: Path) -> None:
    tests = tmp_path / "test_sample.py"
    tests.write_text(
        "import pytest\n"
        "def test_ok():\n    pass\n"
        "def test_bad():\n    print('said before failing')\n    assert 1 == 2, 'one is not two'\n"
        "@pytest.fixture\ndef broken():\n    raise RuntimeError('fixture broke')\n"
        "def test_errors(broken):\n    pass\n"
    )
    junit = tmp_path / "junit.xml"
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-p", "no:cacheprovider"]
    subprocess.run(
        [*pytest, str(tests), "-o", "junit_logging=all", f"--junitxml={junit}"],
        cwd=tmp_path,
        capture_output=True,
        timeout=120,
        check=False,
    )
    found = {test_id.rsplit("::", 1)[1]: (message, text) for test_id, message, text in failures(junit)}
    assert set(found) == {"test_bad", "test_errors"}
    assert "one is not two" in found["test_bad"][0]
    assert "said before failing" in found["test_bad"][1]
    assert "fixture broke" in found["test_errors"][1]
