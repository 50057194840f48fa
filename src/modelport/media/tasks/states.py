"""A media task's status: the values of `media_tasks.status` (and the API's `status`), and the moves between
them that the repository's compare-and-swaps make.

Money moves with the status (`transitions.py`): the price is frozen while a task is unfinished, and an
ended task has settled it exactly once.
"""

from __future__ import annotations

from enum import StrEnum


class TaskStatus(StrEnum):
    # Waiting for a worker; its price is frozen.
    QUEUED = "queued"
    # A worker runs it and renews its lease; `attempts` names the run. Another worker takes it over (a new
    # run) once the lease runs out.
    PROCESSING = "processing"
    # Ended with result files: charged what it cost (at most what was frozen), the rest released.
    SUCCESS = "success"
    # Ended without a result (the model failed, its deadline passed, its workers kept dying): all released.
    FAILED = "failed"
    # Ended by the client: all released.
    CANCELLED = "cancelled"


UNFINISHED = (TaskStatus.QUEUED, TaskStatus.PROCESSING)
TERMINAL = (TaskStatus.SUCCESS, TaskStatus.FAILED, TaskStatus.CANCELLED)

# Every status a task may move to from each status. `processing -> processing` is a new run taking over a
# task whose lease ran out; an ended task never changes again.
TRANSITIONS: dict[TaskStatus, tuple[TaskStatus, ...]] = {
    TaskStatus.QUEUED: (TaskStatus.PROCESSING, TaskStatus.FAILED, TaskStatus.CANCELLED),
    TaskStatus.PROCESSING: (TaskStatus.PROCESSING, TaskStatus.SUCCESS, TaskStatus.FAILED, TaskStatus.CANCELLED),
    TaskStatus.SUCCESS: (),
    TaskStatus.FAILED: (),
    TaskStatus.CANCELLED: (),
}


def sources(target: TaskStatus) -> tuple[TaskStatus, ...]:
    """The statuses a task may move to `target` from: what a compare-and-swap to `target` requires."""
    return tuple(status for status, targets in TRANSITIONS.items() if target in targets)
