"""The task status table: what the repository's compare-and-swaps may do, read from one place."""

from __future__ import annotations

from modelport.media.tasks.states import TERMINAL, TRANSITIONS, UNFINISHED, TaskStatus, sources


def test_every_status_is_unfinished_or_terminal_and_has_a_row() -> None:
    assert set(UNFINISHED) | set(TERMINAL) == set(TaskStatus) == set(TRANSITIONS)
    assert not set(UNFINISHED) & set(TERMINAL)


def test_an_ended_task_never_changes_and_an_unfinished_one_can_end_every_way() -> None:
    for status in TERMINAL:
        assert TRANSITIONS[status] == ()
    for status in UNFINISHED:
        assert {TaskStatus.FAILED, TaskStatus.CANCELLED} <= set(TRANSITIONS[status])


def test_the_sources_each_compare_and_swap_requires() -> None:
    # Only a running task succeeds; a claim takes a queued task or one whose run was lost; nothing returns
    # to the queue.
    assert sources(TaskStatus.SUCCESS) == (TaskStatus.PROCESSING,)
    assert sources(TaskStatus.PROCESSING) == UNFINISHED
    assert sources(TaskStatus.FAILED) == sources(TaskStatus.CANCELLED) == UNFINISHED
    assert sources(TaskStatus.QUEUED) == ()


def test_values_are_the_wire_strings() -> None:
    assert [s.value for s in TaskStatus] == ["queued", "processing", "success", "failed", "cancelled"]
    assert f"{TaskStatus.SUCCESS}" == "success" and TaskStatus("failed") is TaskStatus.FAILED
