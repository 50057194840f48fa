"""The embedded style-transfer network: real repainting (not a copy), deterministic, any size."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image, ImageDraw

from modelport.media.tasks.models import network
from modelport.media.tasks.models.sketch import SketchImage
from tests.support.ssim import ssim


def _photo(width: int = 160, height: int = 120) -> Image.Image:
    image = Image.new("RGB", (width, height), (200, 220, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((20, 30, 90, 100), fill=(200, 40, 30))
    draw.ellipse((90, 10, 150, 70), fill=(30, 140, 60))
    return image


def test_the_network_repaints_the_image() -> None:
    photo = _photo()
    out = network.stylize(photo, style=5, strength=1.0)
    assert out.size == photo.size
    assert ssim(photo, photo.copy()) > 0.999  # the measure itself: a copy scores 1
    assert ssim(photo, out) < 0.6


def test_strength_blends_towards_the_input() -> None:
    photo = _photo()
    full = ssim(photo, network.stylize(photo, style=5, strength=1.0))
    light = ssim(photo, network.stylize(photo, style=5, strength=0.2))
    assert light > full


def test_styles_differ_and_runs_repeat() -> None:
    photo = _photo()
    a1 = np.asarray(network.stylize(photo, style=1, strength=1.0))
    a2 = np.asarray(network.stylize(photo, style=1, strength=1.0))
    b = np.asarray(network.stylize(photo, style=20, strength=1.0))
    assert np.array_equal(a1, a2)
    assert not np.array_equal(a1, b)


def test_odd_sizes_keep_their_size() -> None:
    out = network.stylize(_photo(67, 45), style=0, strength=1.0)
    assert out.size == (67, 45)


def test_sketch_same_prompt_and_seed_same_image() -> None:
    model = SketchImage()
    params = {"prompt": "a lighthouse at dusk", "width": 96, "height": 64}
    first = model.render(params, 11, {})
    again = model.render(params, 11, {})
    other = model.render(params, 12, {})
    assert first[0].data == again[0].data
    assert first[0].data != other[0].data
    image = Image.open(io.BytesIO(first[0].data))
    assert image.size == (96, 64) and image.format == "PNG"


def test_prompt_picks_a_stable_style() -> None:
    assert network.style_for("A Fox ") == network.style_for("a fox")
    assert {network.style_for(f"prompt {i}") for i in range(40)} != {network.style_for("a fox")}
