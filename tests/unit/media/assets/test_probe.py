"""Probing edge cases that need no server: forged headers, bombs, the moderation pass on its own."""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

import pytest

from modelport.media.assets.probe import Rejected, decode_fully, probe
from tests.support import media_make as media


def png_header_only(width: int, height: int) -> bytes:
    """A PNG whose header claims `width` x `height` and that has no pixel data at all."""
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IEND", b"")


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "f"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("size", [(50_000, 50_000), (20_000, 10_000), (6000, 3000)])
def test_huge_declared_images_are_rejected_before_decoding(tmp_path: Path, size: tuple[int, int]) -> None:
    data = png_header_only(*size)
    with pytest.raises(Rejected):
        probe(write(tmp_path, data), len(data))


def test_header_that_passes_but_has_no_pixels_fails_moderation(tmp_path: Path) -> None:
    data = png_header_only(640, 480)
    path = write(tmp_path, data)
    probed = probe(path, len(data))
    assert (probed.kind, probed.width, probed.height) == ("image", 640, 480)
    with pytest.raises(Rejected, match="does not fully decode"):
        decode_fully(path, probed)


def test_animated_gif_decodes_every_frame(tmp_path: Path) -> None:
    from PIL import Image

    frames = [Image.new("RGB", (400, 400), (i * 40, 0, 0)) for i in range(5)]
    path = tmp_path / "a.gif"
    frames[0].save(path, save_all=True, append_images=frames[1:], duration=100)
    probed = probe(path, path.stat().st_size)
    decode_fully(path, probed)
    assert probed.mime_type == "image/gif"


@pytest.mark.parametrize(
    "data",
    [
        b"GIF89a" + b"\0" * 10,
        b"RIFF\0\0\0\0WAVEjunk",
        b"\0\0\0\x18ftypisom" + b"\0" * 100,
        b"ID3" + b"\0" * 50,
        b"<svg xmlns='http://www.w3.org/2000/svg'/>",
        b"%PDF-1.7\n",
    ],
    ids=["gif-header", "wav-header", "mp4-header", "mp3-header", "svg", "pdf"],
)
def test_fakes_and_unsupported_files_are_rejected_never_raise_otherwise(tmp_path: Path, data: bytes) -> None:
    with pytest.raises(Rejected):
        probe(write(tmp_path, data), len(data))


def test_video_shorter_side_decides_the_class(tmp_path: Path) -> None:
    data = media.video(1280, 720, 2.0)
    probed = probe(write(tmp_path, data), len(data))
    assert (probed.width, probed.height, probed.duration_s) == (1280, 720, 2.0)
