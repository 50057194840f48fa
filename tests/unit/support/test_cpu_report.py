"""The suite's CPU report: per-file totals from each test process's file, summed and ranked."""

from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.support import cpu_report, server
from tests.support.cpu_report import CpuRecorder, summarise


def test_files_are_summed_across_processes_and_ranked_by_cpu(tmp_path: Path) -> None:
    gw0 = {"tests/a.py": [10.0, 1.0, 2.0, 1], "tests/b.py": [1, 5, 5, 0]}
    (tmp_path / "cpu-gw0-1.json").write_text(json.dumps(gw0))
    (tmp_path / "cpu-gw1-2.json").write_text(json.dumps({"tests/a.py": [5.0, 0.5, 0.5, 2]}))
    lines = summarise(sorted(tmp_path.glob("cpu-*.json")), top=5).splitlines()
    assert lines[1].split() == ["10.0", "5.0", "5.0", "1.0", "0", "tests/b.py"]
    assert lines[2].split() == ["4.0", "1.5", "2.5", "15.0", "3", "tests/a.py"]
    assert lines[3].split()[:5] == ["14.0", "6.5", "7.5", "16.0", "3"]
    # The files that started servers, most first; a file that started none is not listed.
    assert lines[-1].split() == ["3", "tests/a.py"] and "tests/b.py" not in "\n".join(lines[4:])


def test_a_servers_start_is_counted_for_its_test_file_and_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(server, "starts", Counter())
    monkeypatch.setattr(cpu_report, "ARTIFACTS", tmp_path)
    monkeypatch.setenv("PYTEST_CURRENT_TEST", "tests/x/test_serve.py::test_one (call)")
    server.count_start()
    server.count_start()
    assert server.starts == Counter({"tests/x/test_serve.py": 2})
    recorder = CpuRecorder()
    recorder.start()
    recorder.stop("tests/x/test_serve.py::test_one")
    recorder.write("unit", server.starts)
    (written,) = tmp_path.glob("cpu-unit-*.json")
    assert json.loads(written.read_text())["tests/x/test_serve.py"][3] == 2


def test_a_test_that_burns_cpu_is_charged_to_its_file() -> None:
    recorder = CpuRecorder()
    recorder.start()
    deadline = time.process_time() + 0.2
    while time.process_time() < deadline:
        pass
    recorder.stop("tests/x/test_busy.py::test_spin")
    wall, own, children = recorder.files["tests/x/test_busy.py"]
    assert own >= 0.2 and wall >= 0.2 and children >= 0
