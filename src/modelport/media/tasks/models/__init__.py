"""Task models: the code that renders media tasks on this machine, named by the catalog entry's `runner`.

What the serving process needs of a model (the input fields that carry media URLs, the billing units a
request asks for) is declared here, without importing it. The model's own module (numpy, Pillow, PyAV,
onnxruntime: hundreds of MB once it has rendered) is imported only in the render process
(`media/tasks/render/child.py`), which renders and then exits after idling, handing its memory back.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from modelport.media.tasks.models.base import (
    InputError,
    RenderControl,
    RenderedFile,
    RenderStopped,
    TaskModel,
    report_progress,
    run_controlled,
)

# `local/slideshow-video`'s length when the request names none; `local/style-video`'s longest input.
SLIDESHOW_DEFAULT_SECONDS = 4
STYLE_VIDEO_MAX_SECONDS = 10


@dataclass(frozen=True, slots=True)
class TaskModelSpec:
    """One embedded model as the serving process sees it."""

    module: str
    cls: str
    # Input fields that carry a media URL (our download URL, an https URL or `asset://<id>`): checked at
    # creation, fetched by the worker before the render, which gets their bytes in `inputs`.
    url_fields: tuple[str, ...]
    # How many billing units (`price_unit`) the request asks for (at most), frozen at creation.
    units: Callable[[dict[str, Any]], int]


TASK_MODELS: dict[str, TaskModelSpec] = {
    "sketch": TaskModelSpec("modelport.media.tasks.models.sketch", "SketchImage", (), lambda p: int(p.get("n", 1))),
    "style-transfer": TaskModelSpec("modelport.media.tasks.models.style", "StyleTransfer", ("image_url",), lambda p: 1),
    "slideshow": TaskModelSpec(
        "modelport.media.tasks.models.slideshow",
        "SlideshowVideo",
        ("image_url",),
        lambda p: int(p.get("duration", SLIDESHOW_DEFAULT_SECONDS)),  # priced per second of video
    ),
    "piper-speech": TaskModelSpec(
        "modelport.media.tasks.models.speech",
        "PiperSpeech",
        (),
        lambda p: len(str(p["text"])),  # characters (the catalog prices them per 1,000)
    ),
    "style-video": TaskModelSpec(
        "modelport.media.tasks.models.style_video",
        "StyleVideo",
        ("video_url",),
        lambda p: STYLE_VIDEO_MAX_SECONDS,  # the most a task can cost; charged by the seconds it rendered
    ),
}
_loaded: dict[str, TaskModel] = {}
_lock = threading.Lock()  # renders call this from several threads


def task_model_spec(name: str | None) -> TaskModelSpec | None:
    """The model named by a catalog entry's `runner`; None when this version has none by that name."""
    return TASK_MODELS.get(name) if name else None


def task_model(name: str | None) -> TaskModel | None:
    """The model itself, its module imported on first use (in the render process)."""
    found = task_model_spec(name)
    if name is None or found is None:
        return None
    model = _loaded.get(name)
    if model is None:
        with _lock:
            model = _loaded.get(name)
            if model is None:
                model = _loaded[name] = getattr(importlib.import_module(found.module), found.cls)()
    return model


__all__ = [
    "TASK_MODELS",
    "InputError",
    "RenderControl",
    "RenderStopped",
    "RenderedFile",
    "TaskModel",
    "TaskModelSpec",
    "report_progress",
    "run_controlled",
    "task_model",
    "task_model_spec",
]
