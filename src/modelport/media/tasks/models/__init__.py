"""Task models: the code that renders media tasks on this machine, named by the catalog entry's `runner`.

Each model's module (numpy, Pillow, PyAV, onnxruntime: tens of MB resident) is imported the first time
a task names it, not when a serving process starts: most processes never run a media task.
"""

from __future__ import annotations

import asyncio
import importlib
import threading

from modelport.media.tasks.models.base import (
    InputError,
    RenderControl,
    RenderedFile,
    RenderStopped,
    TaskModel,
    report_progress,
    run_controlled,
)

_TASK_MODELS: dict[str, tuple[str, str]] = {
    "sketch": ("modelport.media.tasks.models.sketch", "SketchImage"),
    "style-transfer": ("modelport.media.tasks.models.style", "StyleTransfer"),
    "slideshow": ("modelport.media.tasks.models.slideshow", "SlideshowVideo"),
    "piper-speech": ("modelport.media.tasks.models.speech", "PiperSpeech"),
    "style-video": ("modelport.media.tasks.models.style_video", "StyleVideo"),
}
_loaded: dict[str, TaskModel] = {}
_lock = threading.Lock()  # the executor calls this from worker threads as well as the event loop


async def load_task_model(name: str | None) -> TaskModel | None:
    """`task_model`, with the model's first import done in a thread: it takes seconds on a busy machine, and
    the event loop keeps serving (and renewing task leases) meanwhile."""
    if not name or name in _loaded or name not in _TASK_MODELS:
        return task_model(name)
    return await asyncio.to_thread(task_model, name)


def task_model(name: str | None) -> TaskModel | None:
    if not name or name not in _TASK_MODELS:
        return None
    model = _loaded.get(name)
    if model is None:
        with _lock:
            model = _loaded.get(name)
            if model is None:
                module, cls = _TASK_MODELS[name]
                model = _loaded[name] = getattr(importlib.import_module(module), cls)()
    return model


__all__ = [
    "InputError",
    "RenderControl",
    "RenderStopped",
    "RenderedFile",
    "TaskModel",
    "load_task_model",
    "report_progress",
    "run_controlled",
    "task_model",
]
