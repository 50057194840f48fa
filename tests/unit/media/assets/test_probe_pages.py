"""Multi-image files (TIFF pages, GIF frames) are checked page by page in the probe, and their pixels are
capped per file, before moderation decodes every page (issue 21 item 6). Before: only page 1 was
checked, and a 10000x10000 second page became `active` after a 368 MiB decode."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from PIL import Image

from modelport.media.assets.probe import MAX_DECODED_PIXELS, Rejected, decode_fully, probe


def tiff(*sizes: tuple[int, int]) -> bytes:
    pages = [Image.new("L", size, color=index * 40) for index, size in enumerate(sizes)]
    out = io.BytesIO()
    pages[0].save(out, "TIFF", save_all=True, append_images=pages[1:], compression="tiff_deflate")
    return out.getvalue()


def gif(frames: int, size: tuple[int, int]) -> bytes:
    images = []
    for index in range(frames):
        frame = Image.new("P", size, color=0)
        frame.putpixel((index % size[0], 0), 1 + index % 200)  # every frame differs, so none is merged
        images.append(frame)
    out = io.BytesIO()
    images[0].save(out, "GIF", save_all=True, append_images=images[1:], duration=40)
    return out.getvalue()


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "f"
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("second", [(6000, 3000), (400, 6001), (2000, 400), (301, 300)])
def test_a_tiff_page_past_the_limits_is_rejected_by_the_probe(tmp_path: Path, second: tuple[int, int]) -> None:
    data = tiff((400, 400), second)
    with pytest.raises(Rejected, match="page 2 of the image"):
        probe(write(tmp_path, data), len(data))


def test_a_tiff_whose_pages_are_all_within_the_limits_passes_and_decodes(tmp_path: Path) -> None:
    data = tiff((400, 400), (640, 480), (500, 500))
    path = write(tmp_path, data)
    probed = probe(path, len(data))
    assert probed.mime_type == "image/tiff" and (probed.width, probed.height) == (400, 400)
    decode_fully(path, probed)


def test_frames_past_the_pixel_cap_are_rejected(tmp_path: Path) -> None:
    frames = MAX_DECODED_PIXELS // (400 * 400) + 1
    data = gif(frames, (400, 400))
    with pytest.raises(Rejected, match="pixels"):
        probe(write(tmp_path, data), len(data))


def test_a_short_animation_passes(tmp_path: Path) -> None:
    data = gif(5, (400, 400))
    path = write(tmp_path, data)
    probed = probe(path, len(data))
    assert probed.mime_type == "image/gif"
    decode_fully(path, probed)
