"""The stall report the task tests print when a server stops answering (tests/support/stacks.py) works here:
py-spy is installed and may read a serving process's stacks."""

from __future__ import annotations

from pathlib import Path

from tests.support.server import run_server
from tests.support.stacks import modelport_stacks


def test_the_stall_report_holds_the_serving_process_stacks(tmp_path: Path) -> None:
    with run_server(tmp_path) as server:
        report = modelport_stacks()
    assert f"--- process {server.process.pid}" in report, report
    assert "serving_main (modelport/process/server.py" in report, report
