"""Media type detection reads content, never names: real generated media in, non-media out."""

from __future__ import annotations

import pytest

from modelport.media.files.detect import SNIFF_BYTES, detect_media
from tests.unit.media.files import samples


@pytest.mark.parametrize(
    ("data", "media_type", "mime"),
    [
        (samples.image_bytes("PNG"), "image", "image/png"),
        (samples.image_bytes("JPEG"), "image", "image/jpeg"),
        (samples.image_bytes("GIF"), "image", "image/gif"),
        (samples.image_bytes("WEBP"), "image", "image/webp"),
        (samples.wav_bytes(), "audio", "audio/wav"),
        (samples.mp3_bytes(), "audio", "audio/mpeg"),
        (samples.video_bytes("mp4", "mpeg4"), "video", "video/mp4"),
        (samples.video_bytes("webm", "libvpx-vp9"), "video", "video/webm"),
        (samples.video_bytes("mov", "mpeg4"), "video", "video/quicktime"),
    ],
    ids=["png", "jpeg", "gif", "webp", "wav", "mp3", "mp4", "webm", "mov"],
)
def test_detects_real_media(data: bytes, media_type: str, mime: str) -> None:
    detected = detect_media(data[:SNIFF_BYTES])
    assert detected is not None
    assert (detected.type, detected.mime_type) == (media_type, mime)


@pytest.mark.parametrize(
    "data",
    [samples.PDF_BYTES, samples.TEXT_BYTES, samples.ZIP_BYTES, b"", b"\x00" * 100, b"8BPS" + b"\x00" * 40],
    ids=["pdf", "text", "zip", "empty", "zeros", "photoshop"],
)
def test_rejects_non_media(data: bytes) -> None:
    assert detect_media(data) is None


def test_a_png_header_glued_to_text_is_still_judged_by_content() -> None:
    # The name or declared type never enter; the first bytes decide.
    assert detect_media(samples.TEXT_BYTES + samples.image_bytes()) is None
