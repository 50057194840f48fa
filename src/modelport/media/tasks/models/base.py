"""What an embedded task model provides: the units a request will be billed for, and a blocking render."""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RenderedFile:
    data: bytes
    mime_type: str
    format: str  # the file extension, e.g. "png"
    type: str  # image | video | audio
    width: int | None = None
    height: int | None = None
    role: str = "primary"
    # Facts about the output for the task's `result.metadata` (a video's duration, frame count, fps).
    metadata: Mapping[str, object] = field(default_factory=dict)
    # Billing units this output turned out to be worth, when only the render knows (a video-to-video task's
    # seconds): the task is charged for these (at most what was frozen) instead of `units(params)`.
    units: int | None = None


class InputError(Exception):
    """The task's input cannot be used (e.g. `image_url` is not an image): the task fails, refunded."""


class TaskModel(Protocol):
    """The render; the model's URL fields and billing units are declared in `models.TASK_MODELS`."""

    def render(self, params: dict[str, Any], seed: int, inputs: Mapping[str, bytes]) -> list[RenderedFile]:
        """Produce the result files. Blocking and CPU-bound: callers run it in a worker thread."""
        ...


def derive_seed(seed: int, index: int) -> int:
    """The seed of the `index`-th output of a task: distinct per output, the same for the same task seed."""
    digest = hashlib.sha256(f"{seed}:{index}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


class RenderStopped(Exception):
    """The render was told to stop (the task was cancelled, passed its deadline or was taken over)."""


class RenderControl:
    """One render's progress and stop flag. In the serving process the event loop reads the fraction
    (written to the row at most every `tasks.progress_interval_seconds`) and sets the flag; the render
    process (`render_child`) keeps its own per render, and `on_progress` sends each change back."""

    def __init__(self, on_progress: Callable[[float], None] | None = None) -> None:
        self.fraction: float | None = None
        self.stop = threading.Event()
        self.on_progress = on_progress


_current = threading.local()


def report_progress(done: float, total: float) -> None:
    """Models call this between frames, sentences or steps: records `done / total` and raises
    `RenderStopped` once the render was told to stop. Free outside a controlled render (a plain call)."""
    control: RenderControl | None = getattr(_current, "control", None)
    if control is None:
        return
    if control.stop.is_set():
        raise RenderStopped()
    if total > 0:
        control.fraction = min(1.0, max(0.0, done / total))
        if control.on_progress is not None:
            control.on_progress(control.fraction)


def run_controlled(control: RenderControl, work: Callable[[], T]) -> T:
    """Run `work` in this thread with `control` as what `report_progress` reports to."""
    _current.control = control
    try:
        return work()
    finally:
        _current.control = None
