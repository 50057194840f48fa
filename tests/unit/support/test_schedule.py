"""tests/support/schedule.py names real tests: a renamed file or test would otherwise drop out of the serial
stage (and run beside other work) or out of the heavy group without anyone noticing."""

from __future__ import annotations

import re

import pytest

from tests.support import schedule
from tests.support.conformance_data import REPO_ROOT

ENTRIES = sorted({*schedule.SERIAL, *schedule.HEAVY})


@pytest.mark.parametrize("entry", ENTRIES)
def test_every_entry_names_an_existing_file_or_test(entry: str) -> None:
    path, _, name = entry.partition("::")
    target = REPO_ROOT / path
    assert target.exists(), f"{path} does not exist"
    if name:
        assert re.search(rf"^(async )?def {re.escape(name)}\(", target.read_text(), re.MULTILINE), entry


def test_serial_wins_over_heavy_and_serial_files_cover_every_serial_entry() -> None:
    both = "tests/unit/upstreams/test_local_model.py::test_close_cancels_a_running_generation"
    assert schedule.is_serial(both) and schedule.is_heavy(both)  # tests/conftest.py checks serial first
    files = schedule.serial_files()
    assert all(any(entry.startswith(f) for f in files) for entry in schedule.SERIAL)
    assert not schedule.is_serial("tests/unit/support/test_schedule.py::test_serial_wins_over_heavy")
