"""Embedded media models that run tasks on this machine, by the catalog entry's `runner` name."""

from __future__ import annotations

from modelport.media.tasks.models.base import InputError, RenderedFile, TaskModel
from modelport.media.tasks.models.sketch import SketchImage
from modelport.media.tasks.models.slideshow import SlideshowVideo
from modelport.media.tasks.models.speech import PiperSpeech
from modelport.media.tasks.models.style import StyleTransfer
from modelport.media.tasks.models.style_video import StyleVideo

_RUNNERS: dict[str, TaskModel] = {
    "sketch": SketchImage(),
    "style-transfer": StyleTransfer(),
    "slideshow": SlideshowVideo(),
    "piper-speech": PiperSpeech(),
    "style-video": StyleVideo(),
}


def runner(name: str | None) -> TaskModel | None:
    return _RUNNERS.get(name) if name else None


__all__ = ["InputError", "RenderedFile", "TaskModel", "runner"]
