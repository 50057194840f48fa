"""The failures of a run, printed last: each failed test's message and the end of its report, read from
the stages' JUnit XML files, then the stacks of the modelport processes of each test that timed out
(`test-artifacts/timeouts/`, written by tests/conftest.py).

CI keeps only the end of a run's output; the durations and CPU tables printed after pytest's own summary
would push a failure's details out of it. `python -m tests.support.failure_report [LINES]` prints each
failure's last LINES lines (default 120).
"""

from __future__ import annotations

import sys
import xml.etree.ElementTree as ET
from pathlib import Path

ARTIFACTS = Path("test-artifacts")


def failures(junit: Path) -> list[tuple[str, str, str]]:
    """(test id, message, full text) of each failed or erroring test case in one JUnit XML file."""
    found = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        for outcome in (*case.findall("failure"), *case.findall("error")):
            test_id = f"{case.get('classname', '')}::{case.get('name', '')}"
            text = outcome.text or ""
            for section in ("system-out", "system-err"):
                for extra in case.findall(section):
                    text += f"\n--- {section}\n{extra.text or ''}"
            found.append((test_id, outcome.get("message", ""), text))
    return found


def main(lines: int) -> int:
    reports = sorted(ARTIFACTS.glob("junit-*.xml"))
    every = [failure for report in reports for failure in failures(report)]
    if not every:
        print("no failed tests in", ", ".join(str(r) for r in reports) or "no JUnit reports")
    for test_id, message, text in every:
        print(f"==> FAILED {test_id}: {message[:300]}")
        print("\n".join(text.splitlines()[-lines:]))
    for stacks in sorted((ARTIFACTS / "timeouts").glob("*.txt")):
        print(f"==> timed out: {stacks.name}")
        print("\n".join(stacks.read_text().splitlines()[-lines:]))
    return 0


if __name__ == "__main__":
    sys.exit(main(int(sys.argv[1]) if len(sys.argv) > 1 else 120))
