"""`local/style-video`: every frame of a video repainted by the style-transfer network, re-encoded with PyAV.

The input (our download URL, an https URL or `asset://<id>`, fetched by the worker) is decoded with PyAV;
each frame goes through `network.stylize` at the output size (the input's, scaled down so its longer side is
at most `MAX_SIDE`, both sides even) and is encoded as H.264 at the input's average frame rate. The first
audio track is kept: decoded and encoded again as AAC (whatever its codec was, so any input muxes into MP4).

Limits (refused as `invalid_input`, refunded): at most `MAX_SECONDS` seconds and `MAX_FRAMES` frames, and
the frame size of video assets (at most 6000 px a side, 8,295,044 pixels): every video stream's size is read
from the container before anything is decoded, and every decoded frame's is checked again (a stream may
change size). Frames are converted to RGB at the output size (swscale), never at the input's. The
price is per second of output; the task freezes `MAX_SECONDS` seconds' worth at creation (the length is
unknown until the file is read) and is charged for the whole seconds it rendered (rounded up).
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from fractions import Fraction
from pathlib import Path
from typing import Any

import av
import numpy as np
from PIL import Image

from modelport.media.assets.probe import VIDEO_MAX_PIXELS
from modelport.media.tasks.models import STYLE_VIDEO_MAX_SECONDS, network
from modelport.media.tasks.models.base import InputError, RenderedFile, report_progress

MAX_SECONDS = STYLE_VIDEO_MAX_SECONDS  # declared with the model's billing units
MAX_FRAMES = 300
MAX_SIDE = 512
MAX_INPUT_SIDE = 6000  # the video assets' bound, as is VIDEO_MAX_PIXELS
AUDIO_BITRATE = 96_000


def output_size(width: int, height: int) -> tuple[int, int]:
    scale = min(1.0, MAX_SIDE / max(width, height))
    return max(2, int(width * scale) // 2 * 2), max(2, int(height * scale) // 2 * 2)


class StyleVideo:
    def render(self, params: dict[str, Any], seed: int, inputs: Mapping[str, bytes]) -> list[RenderedFile]:
        style = int(params.get("style", 0))
        with _temp_file(".in", inputs["video_url"]) as source, _temp_file(".mp4", b"") as target:
            facts = _restyle(source, target, style)
            data = target.read_bytes()
        width, height, frames, fps, has_audio = facts
        seconds = frames / float(fps)
        return [
            RenderedFile(
                data=data,
                mime_type="video/mp4",
                format="mp4",
                type="video",
                width=width,
                height=height,
                metadata={
                    "duration": round(seconds, 3),
                    "frame_count": frames,
                    "fps": float(fps) if fps.denominator != 1 else int(fps),
                    "audio": has_audio,
                    "style": style,
                },
                units=max(1, math.ceil(seconds - 1e-9)),
            )
        ]


@contextlib.contextmanager
def _temp_file(suffix: str, data: bytes) -> Iterator[Path]:
    """A temporary file holding `data`, removed on exit (PyAV needs seekable files for MP4 in and out)."""
    fd, name = tempfile.mkstemp(suffix=suffix)
    path = Path(name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        yield path
    finally:
        path.unlink(missing_ok=True)


def _restyle(source: Path, target: Path, style: int) -> tuple[int, int, int, Fraction, bool]:
    try:
        reader = av.open(str(source), "r")
    except (av.error.FFmpegError, ValueError) as exc:
        raise InputError("video_url is not a video PyAV can read") from exc
    with reader:
        if not reader.streams.video:
            raise InputError("video_url has no video track")
        for stream in reader.streams.video:  # before any decoding: an 8000x8000 frame is 192 MB as RGB
            _check_size(stream.codec_context.width, stream.codec_context.height)
        video_in = reader.streams.video[0]
        audio_in = reader.streams.audio[0] if reader.streams.audio else None
        declared = float(reader.duration or 0) / 1_000_000
        if declared > MAX_SECONDS + 0.5:
            raise InputError(f"video_url is {declared:.1f} s long; at most {MAX_SECONDS} s")
        rate = video_in.average_rate or video_in.guessed_rate or Fraction(24)
        fps = Fraction(rate).limit_denominator(1001)
        width, height = output_size(video_in.codec_context.width, video_in.codec_context.height)
        with av.open(str(target), "w", format="mp4", options={"movflags": "faststart"}) as writer:
            video_out = writer.add_stream("libx264", rate=fps)
            video_out.width, video_out.height = width, height
            video_out.pix_fmt = "yuv420p"
            video_out.time_base = 1 / fps
            video_out.codec_context.options = {"crf": "23", "preset": "veryfast"}
            video_out.codec_context.thread_count = 1
            audio_out = None
            if audio_in is not None:
                layout = audio_in.codec_context.layout.name if audio_in.codec_context.channels <= 2 else "stereo"
                audio_out = writer.add_stream("aac", rate=audio_in.codec_context.sample_rate, layout=layout)
                audio_out.bit_rate = AUDIO_BITRATE
            frames = 0
            # For progress only: the container's frame count, else its length at the frame rate.
            expected = video_in.frames or max(1, round(declared * float(fps))) or MAX_FRAMES
            try:
                for frame in _decoded(reader, video_in, audio_in):
                    if isinstance(frame, av.VideoFrame):
                        _check_size(frame.width, frame.height)
                        frames += 1
                        if frames > MAX_FRAMES:
                            raise InputError(f"video_url has more than {MAX_FRAMES} frames")
                        painted = _paint(frame, width, height, style)
                        painted.pts = frames - 1
                        for packet in video_out.encode(painted):
                            writer.mux(packet)
                        report_progress(frames, max(expected, frames + 1))  # stops here when cancelled
                    elif audio_out is not None:
                        frame.pts = None  # the encoder re-times the resampled audio from zero
                        for packet in audio_out.encode(frame):
                            writer.mux(packet)
            except av.error.FFmpegError as exc:
                raise InputError(f"video_url could not be decoded: {exc}") from exc
            if frames == 0:
                raise InputError("video_url has no frames")
            for packet in video_out.encode(None):
                writer.mux(packet)
            if audio_out is not None:
                for packet in audio_out.encode(None):
                    writer.mux(packet)
    return width, height, frames, fps, audio_in is not None


def _check_size(width: int, height: int) -> None:
    if not width or not height:
        raise InputError("video_url has no frame size")
    if width > MAX_INPUT_SIDE or height > MAX_INPUT_SIDE or width * height > VIDEO_MAX_PIXELS:
        raise InputError(
            f"video_url is {width}x{height} px; at most {MAX_INPUT_SIDE} px a side and "
            f"{VIDEO_MAX_PIXELS:,} pixels a frame"
        )


def _decoded(reader: Any, video: Any, audio: Any) -> Iterator[Any]:
    streams = [video] if audio is None else [video, audio]
    for packet in reader.demux(*streams):
        yield from packet.decode()


def _paint(frame: Any, width: int, height: int, style: int) -> av.VideoFrame:
    # Scaled while converted to RGB: a full-size RGB copy of a large frame is never made.
    image: Image.Image = frame.reformat(width=width, height=height, format="rgb24", interpolation="BILINEAR").to_image()
    painted = network.stylize(image, style, 1.0)
    if painted.size != (width, height):  # the network may round sizes to its stride
        painted = painted.resize((width, height), Image.Resampling.BILINEAR)
    return av.VideoFrame.from_ndarray(np.asarray(painted, dtype=np.uint8), format="rgb24")
