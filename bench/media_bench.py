"""Seconds per task and peak RSS of each embedded media model, rendered in this process as a worker would.

Each model runs in a fresh child process (so its peak RSS is its own): the first render includes loading
the style-transfer network (what the first task after `serve` starts waits for), the next ones do not.

    .venv/bin/python bench/media_bench.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import resource
import time
from typing import Any

from PIL import Image, ImageDraw

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "local/sketch-image 768x512": ("sketch", {"prompt": "a lighthouse at dusk", "width": 768, "height": 512}),
    "local/style-transfer 768x512": ("style-transfer", {"image_url": "(generated)", "style": 3}),
    "local/slideshow-video 512x288 4 s 24 fps": (
        "slideshow",
        {"prompt": "a harbour", "width": 512, "height": 288, "fps": 24, "duration": 4},
    ),
}


def _photo() -> bytes:
    image = Image.new("RGB", (768, 512), (200, 220, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((80, 100, 380, 450), fill=(190, 40, 30))
    draw.ellipse((400, 50, 700, 350), fill=(40, 150, 70))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _run(runner_name: str, params: dict[str, Any], repeat: int, queue: Any) -> None:
    from modelport.media.tasks.models import runner

    model = runner(runner_name)
    assert model is not None
    inputs = {"image_url": _photo()} if "image_url" in params else {}
    times = []
    for index in range(repeat):
        start = time.perf_counter()
        model.render(params, index, inputs)
        times.append(time.perf_counter() - start)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    queue.put({"first_s": round(times[0], 3), "next_s": [round(t, 3) for t in times[1:]], "peak_rss_mib": peak_mib})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    context = multiprocessing.get_context("spawn")
    report: dict[str, Any] = {}
    for name, (runner_name, params) in CASES.items():
        queue = context.Queue()
        child = context.Process(target=_run, args=(runner_name, params, args.repeat, queue))
        child.start()
        report[name] = queue.get(timeout=600)
        child.join()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
