"""`local/style-transfer`: an image repainted by the style-transfer network in one of its 26 styles.

The image arrives as bytes (the worker fetched `image_url`); it is decoded with Pillow (EXIF rotation applied,
transparency flattened on white), capped at `network.MAX_SIDE` on its longer side, and returned as a PNG of
the size the network produced.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from PIL import Image, ImageOps, UnidentifiedImageError

from modelport.media.tasks.models import network
from modelport.media.tasks.models.base import InputError, RenderedFile

# Refuse images whose pixel count would take a decompression bomb's memory, before decoding them.
MAX_PIXELS = 40_000_000
MIN_SIDE = 32


def decode_image(data: bytes, field: str) -> Image.Image:
    try:
        opened = Image.open(io.BytesIO(data))
        if opened.width * opened.height > MAX_PIXELS:
            raise InputError(f"{field}: the image has more than {MAX_PIXELS} pixels")
        image: Image.Image = ImageOps.exif_transpose(opened)
        image.load()
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise InputError(f"{field} is not an image Pillow can read") from exc
    if min(image.size) < MIN_SIDE:
        raise InputError(f"{field}: the image is {image.width}x{image.height}; both sides need {MIN_SIDE} pixels")
    if image.mode in ("RGBA", "LA", "P", "PA"):
        rgba = image.convert("RGBA")
        image = Image.alpha_composite(Image.new("RGBA", rgba.size, (255, 255, 255, 255)), rgba)
    return image.convert("RGB")


class StyleTransfer:
    def render(self, params: dict[str, Any], seed: int, inputs: Mapping[str, bytes]) -> list[RenderedFile]:
        image = decode_image(inputs["image_url"], "image_url")
        style = int(params.get("style", 0))
        strength = float(params.get("strength", 1.0))
        result = network.stylize(image, style, strength)
        out = io.BytesIO()
        result.save(out, format="PNG", compress_level=1)
        return [
            RenderedFile(
                data=out.getvalue(),
                mime_type="image/png",
                format="png",
                type="image",
                width=result.width,
                height=result.height,
            )
        ]
