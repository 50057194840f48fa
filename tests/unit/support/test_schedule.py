"""tests/support/schedule.py names real tests: a renamed file or test would otherwise drop out of the serial
stage (and run beside other work) or out of the heavy group without anyone noticing."""

from __future__ import annotations

import re

import pytest

from tests.support import schedule
from tests.support.conformance_data import REPO_ROOT

ENTRIES = sorted({*schedule.SERIAL, *schedule.HEAVY, *schedule.LONG})


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


def test_long_groups_are_whole_files_neither_heavy_nor_serial() -> None:
    # A LONG entry is an xdist group: a file of the parallel stage whose tests are not in the heavy group.
    for path in schedule.LONG:
        assert "::" not in path and path.startswith("tests/integration/"), path
        assert not schedule.is_heavy(path + "::x") and not schedule.is_serial(path + "::x"), path


def test_groups_go_out_heavy_first_then_long_then_by_size_and_single_tests_last() -> None:
    first_long, second_long = list(schedule.LONG)[:2]
    groups: list[str | None] = [None, "tests/integration/small.py", "tests/integration/big.py", second_long]
    groups += ["tests/integration/big.py", schedule.HEAVY_GROUP, first_long, None, "tests/integration/big.py"]
    order = sorted(range(len(groups)), key=lambda i: schedule.group_order(groups)[i])  # stable, like conftest's
    assert [groups[i] for i in order] == [
        schedule.HEAVY_GROUP,
        first_long,
        second_long,
        "tests/integration/big.py",
        "tests/integration/big.py",
        "tests/integration/big.py",
        "tests/integration/small.py",
        None,
        None,
    ]
    assert order[-2:] == [0, 7]  # equals keep their (shuffled) order
