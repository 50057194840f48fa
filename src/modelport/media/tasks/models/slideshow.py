"""`local/slideshow-video`: a slow pan and zoom over a still, encoded as H.264 MP4 with PyAV.

The still is the sketch model's painting of `prompt` (text-to-video) or the image at `image_url`
(image-to-video). Each frame crops a window that shrinks (zooms in by up to a quarter) and drifts in a
direction the seed picks, resized to the requested size with Pillow, so the same input and seed give the
same frames.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from PIL import Image

from modelport.media.tasks.models import SLIDESHOW_DEFAULT_SECONDS
from modelport.media.tasks.models.base import InputError, RenderedFile, derive_seed, report_progress
from modelport.media.tasks.models.sketch import SketchImage
from modelport.media.tasks.models.style import decode_image

DEFAULT_WIDTH, DEFAULT_HEIGHT, DEFAULT_FPS = 512, 288, 24
DEFAULT_SECONDS = SLIDESHOW_DEFAULT_SECONDS  # declared with the model's billing units
ZOOM = 0.25  # the last frame shows 1 / (1 + ZOOM) of the still's width and height


class SlideshowVideo:
    def render(self, params: dict[str, Any], seed: int, inputs: Mapping[str, bytes]) -> list[RenderedFile]:
        width = int(params.get("width", DEFAULT_WIDTH))
        height = int(params.get("height", DEFAULT_HEIGHT))
        fps = int(params.get("fps", DEFAULT_FPS))
        seconds = int(params.get("duration", DEFAULT_SECONDS))
        if "image_url" in inputs:
            still = decode_image(inputs["image_url"], "image_url")
        elif "prompt" in params:
            # Paint the still larger than the frame, so zooming in keeps detail.
            painted = SketchImage().paint(str(params["prompt"]), width * 5 // 4, height * 5 // 4, derive_seed(seed, 0))
            still = decode_image(painted.data, "prompt")
        else:
            raise InputError("give prompt or image_url")
        frames = seconds * fps
        data = _encode(_frames(still, width, height, frames, derive_seed(seed, 1)), width, height, fps, frames)
        return [
            RenderedFile(
                data=data,
                mime_type="video/mp4",
                format="mp4",
                type="video",
                width=width,
                height=height,
                metadata={"duration": seconds, "frame_count": frames, "fps": fps},
            )
        ]


def _frames(still: Image.Image, width: int, height: int, count: int, seed: int) -> Any:
    # Crop windows of the frame's aspect ratio, the first as large as the still allows.
    aspect = width / height
    full_w = min(still.width, still.height * aspect)
    full_h = full_w / aspect
    rng = np.random.default_rng(seed)
    angle = float(rng.uniform(0, 2 * np.pi))
    for i in range(count):
        t = i / max(count - 1, 1)
        t = t * t * (3 - 2 * t)  # ease in and out
        scale = 1 / (1 + ZOOM * t)
        w, h = full_w * scale, full_h * scale
        # The window's centre drifts towards one side as far as the shrinking window allows.
        room_x, room_y = (still.width - w) / 2, (still.height - h) / 2
        cx = still.width / 2 + np.cos(angle) * room_x * t
        cy = still.height / 2 + np.sin(angle) * room_y * t
        box = (cx - w / 2, cy - h / 2, cx + w / 2, cy + h / 2)
        yield still.resize((width, height), Image.Resampling.BILINEAR, box=box)


def _encode(frames: Any, width: int, height: int, fps: int, total: int) -> bytes:
    # The MP4 muxer seeks back to write its index, so it writes to a real temporary file.
    fd, name = tempfile.mkstemp(suffix=".mp4")
    os.close(fd)
    path = Path(name)
    try:
        with av.open(str(path), "w", format="mp4", options={"movflags": "faststart"}) as container:
            stream = container.add_stream("libx264", rate=fps)
            stream.width, stream.height = width, height
            stream.pix_fmt = "yuv420p"
            stream.time_base = Fraction(1, fps)
            # Fixed encoder settings and one thread: the same frames give the same bytes.
            stream.codec_context.options = {"crf": "23", "preset": "veryfast"}
            stream.codec_context.thread_count = 1
            for index, image in enumerate(frames):
                frame = av.VideoFrame.from_ndarray(np.asarray(image, dtype=np.uint8), format="rgb24")
                frame.pts = index
                for packet in stream.encode(frame):
                    container.mux(packet)
                report_progress(index + 1, total)  # stops here when cancelled
            for packet in stream.encode():
                container.mux(packet)
        return path.read_bytes()
    finally:
        path.unlink(missing_ok=True)
