"""Embedded media models that run tasks on this machine, by the catalog entry's `runner` name."""

from __future__ import annotations

from modelport.media.tasks.models.base import InputError, RenderedFile, TaskModel
from modelport.media.tasks.models.sketch import SketchImage
from modelport.media.tasks.models.slideshow import SlideshowVideo
from modelport.media.tasks.models.style import StyleTransfer

_RUNNERS: dict[str, TaskModel] = {
    "sketch": SketchImage(),
    "style-transfer": StyleTransfer(),
    "slideshow": SlideshowVideo(),
}


def runner(name: str | None) -> TaskModel | None:
    return _RUNNERS.get(name) if name else None


__all__ = ["InputError", "RenderedFile", "TaskModel", "runner"]
