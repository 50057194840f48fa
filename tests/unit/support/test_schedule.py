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
        assert re.search(rf"^(async )?def {re.escape(name)}\w*\(", target.read_text(), re.MULTILINE), entry


def test_serial_files_cover_every_serial_entry_and_nothing_is_both() -> None:
    # tests/conftest.py checks serial first, so an entry in both tables would silently lose its heavy mark.
    assert not set(schedule.SERIAL) & set(schedule.HEAVY)
    files = schedule.serial_files()
    assert all(any(entry.startswith(f) for f in files) for entry in schedule.SERIAL)
    assert not schedule.is_serial("tests/unit/support/test_schedule.py::test_serial_wins_over_heavy")
