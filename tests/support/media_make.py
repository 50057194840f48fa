"""Real media files made with Pillow and PyAV for the asset limit tests, cached per test session.

Sizes stay small where the limits allow: videos run at 1-2 fps, images are flat colours.
"""

from __future__ import annotations

import functools
import io
import tempfile
import wave
from fractions import Fraction
from pathlib import Path

import av
import numpy as np
import pillow_heif
from PIL import Image

pillow_heif.register_heif_opener()


@functools.cache
def image(width: int, height: int, fmt: str = "PNG", pad_to: int | None = None) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (width, height), (30, 120, 200)).save(out, fmt)
    data = out.getvalue()
    if pad_to is not None:
        assert pad_to >= len(data)
        data += b"\0" * (pad_to - len(data))  # trailing bytes after the image's end: size tests only
    return data


@functools.cache
def video(width: int, height: int, seconds: float, fmt: str = "mp4", fps: int = 1) -> bytes:
    """An mpeg4 video of `seconds` (a multiple of 1/fps), index (moov) first so a cut tail is still probed."""
    frames = round(seconds * fps)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / f"v.{fmt}"
        # faststart rewrites the file to move the index first: it needs a real, seekable file.
        with av.open(str(path), "w", format=fmt, options={"movflags": "faststart"}) as c:
            _encode(c, width, height, frames, fps)
        return path.read_bytes()


def _encode(c: av.container.OutputContainer, width: int, height: int, frames: int, fps: int) -> None:
    stream = c.add_stream("mpeg4", rate=fps)
    assert isinstance(stream, av.VideoStream)
    stream.width, stream.height, stream.pix_fmt = width, height, "yuv420p"
    stream.time_base = Fraction(1, fps)
    for i in range(frames):
        frame = av.VideoFrame(width, height, "yuv420p")
        for plane in frame.planes:
            plane.update(bytes([(i * 37) % 256]) * plane.buffer_size)
        frame.pts = i
        for packet in stream.encode(frame):
            c.mux(packet)
    for packet in stream.encode():
        c.mux(packet)


@functools.cache
def wav(seconds: float, rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x10" * int(seconds * rate))
    return out.getvalue()


@functools.cache
def mp3(seconds: float, rate: int = 16000) -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format="mp3") as c:
        stream = c.add_stream("libmp3lame", rate=rate)
        assert isinstance(stream, av.AudioStream)
        stream.layout = "mono"
        size = stream.codec_context.frame_size or 1152
        for i in range(int(seconds * rate) // size + 1):
            frame = av.AudioFrame(format=stream.codec_context.format.name, layout="mono", samples=size)
            for plane in frame.planes:
                plane.update(bytes(plane.buffer_size))
            frame.sample_rate, frame.pts = rate, i * size
            for packet in stream.encode(frame):
                c.mux(packet)
        for packet in stream.encode():
            c.mux(packet)
    return out.getvalue()


def truncated(data: bytes, keep: float = 0.6) -> bytes:
    return data[: int(len(data) * keep)]


@functools.cache
def clip_with_audio(width: int, height: int, seconds: int, fps: int, tone_hz: int = 440) -> bytes:
    """An H.264 MP4 of moving colour bars with an AAC sine tone: the input of video-to-video tests."""
    rate = 16000
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "clip.mp4"
        with av.open(str(path), "w", format="mp4", options={"movflags": "faststart"}) as c:
            video_stream = c.add_stream("libx264", rate=fps)
            assert isinstance(video_stream, av.VideoStream)
            video_stream.width, video_stream.height, video_stream.pix_fmt = width, height, "yuv420p"
            audio_stream = c.add_stream("aac", rate=rate, layout="mono")
            assert isinstance(audio_stream, av.AudioStream)
            x = np.arange(width)
            for i in range(seconds * fps):
                bars = ((x[None, :] + i * 4) // 8 % 2 * 200 + 30).astype(np.uint8)
                rgb = np.stack(
                    [
                        np.repeat(bars, height, 0),
                        np.full((height, width), i * 9 % 256, np.uint8),
                        np.repeat(255 - bars, height, 0),
                    ],
                    axis=-1,
                )
                frame = av.VideoFrame.from_ndarray(rgb, format="rgb24")
                frame.pts = i
                for packet in video_stream.encode(frame):
                    c.mux(packet)
            t = np.arange(seconds * rate) / rate
            samples = (np.sin(2 * np.pi * tone_hz * t) * 0.5).astype(np.float32).reshape(1, -1)
            audio = av.AudioFrame.from_ndarray(samples, format="flt", layout="mono")
            audio.sample_rate, audio.pts = rate, 0
            for packet in [*audio_stream.encode(audio), *audio_stream.encode(None)]:
                c.mux(packet)
            for packet in video_stream.encode(None):
                c.mux(packet)
        return path.read_bytes()
