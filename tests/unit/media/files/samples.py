"""Real media bytes made on the spot: Pillow images, a `wave` WAV, PyAV MP4/WebM/MP3, plus non-media."""

from __future__ import annotations

import io
import wave

import av
from PIL import Image


def image_bytes(fmt: str = "PNG", size: tuple[int, int] = (16, 12)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (200, 30, 90)).save(out, fmt)
    return out.getvalue()


def wav_bytes(seconds: float = 0.2, rate: int = 8000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(b"\x00\x10" * int(seconds * rate))
    return out.getvalue()


def video_bytes(container: str = "mp4", codec: str = "mpeg4", frames: int = 3) -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format=container) as c:
        stream = c.add_stream(codec, rate=10)
        assert isinstance(stream, av.VideoStream)
        stream.width, stream.height, stream.pix_fmt = 32, 32, "yuv420p"
        for i in range(frames):
            frame = av.VideoFrame(32, 32, "yuv420p")
            for plane in frame.planes:
                plane.update(bytes([i * 40 % 256]) * plane.buffer_size)
            frame.pts = i
            for packet in stream.encode(frame):
                c.mux(packet)
        for packet in stream.encode():
            c.mux(packet)
    return out.getvalue()


def mp3_bytes(frames: int = 10) -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format="mp3") as c:
        stream = c.add_stream("libmp3lame", rate=16000)
        assert isinstance(stream, av.AudioStream)
        stream.layout = "mono"
        size = stream.codec_context.frame_size or 1152
        for i in range(frames):
            frame = av.AudioFrame(format=stream.codec_context.format.name, layout="mono", samples=size)
            for plane in frame.planes:
                plane.update(bytes(plane.buffer_size))
            frame.sample_rate, frame.pts = 16000, i * size
            for packet in stream.encode(frame):
                c.mux(packet)
        for packet in stream.encode():
            c.mux(packet)
    return out.getvalue()


PDF_BYTES = b"%PDF-1.4\n1 0 obj << /Type /Catalog >> endobj\ntrailer << /Root 1 0 R >>\n%%EOF\n"
TEXT_BYTES = b"just some text, certainly not an image\n" * 10
ZIP_BYTES = b"PK\x03\x04" + b"\x00" * 60
