"""Seconds per task and peak RSS of each embedded media model, rendered in this process as a worker would.

Each model runs in a fresh child process (so its peak RSS is its own): the first render includes loading
its network (the style-transfer network, or the Piper voice: what the first task after `serve` starts waits
for), the next ones do not. `load_s` is that load alone, timed before the first render in a second child.

    .venv/bin/python bench/media_bench.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import resource
import tempfile
import time
from fractions import Fraction
from typing import Any

import av
import numpy as np
from PIL import Image, ImageDraw

SPEECH = (
    "The harbour lights came on one by one as the fog rolled in from the sea. A small boat slipped out past "
    "the breakwater, its engine a low hum under the cry of the gulls. On the quay, an old man folded his nets "
    "and watched it go, the way he had watched a thousand boats go before it. Somewhere behind him a radio "
    "played a song he half remembered from a summer long ago, and he hummed along without knowing the words."
)

CASES: dict[str, tuple[str, dict[str, Any]]] = {
    "local/sketch-image 768x512": ("sketch", {"prompt": "a lighthouse at dusk", "width": 768, "height": 512}),
    "local/style-transfer 768x512": ("style-transfer", {"image_url": "(generated)", "style": 3}),
    "local/slideshow-video 512x288 4 s 24 fps": (
        "slideshow",
        {"prompt": "a harbour", "width": 512, "height": 288, "fps": 24, "duration": 4},
    ),
    "local/style-video 512x288 4 s 24 fps, AAC audio": ("style-video", {"video_url": "(generated)", "style": 3}),
    f"local/piper-speech {len(SPEECH)} characters, wav": ("piper-speech", {"text": SPEECH}),
    f"local/piper-speech {len(SPEECH)} characters, mp3": ("piper-speech", {"text": SPEECH, "format": "mp3"}),
}


def _photo() -> bytes:
    image = Image.new("RGB", (768, 512), (200, 220, 240))
    draw = ImageDraw.Draw(image)
    draw.rectangle((80, 100, 380, 450), fill=(190, 40, 30))
    draw.ellipse((400, 50, 700, 350), fill=(40, 150, 70))
    out = io.BytesIO()
    image.save(out, "PNG")
    return out.getvalue()


def _clip(width: int = 512, height: int = 288, seconds: int = 4, fps: int = 24) -> bytes:
    """An H.264 MP4 of moving bars with an AAC tone: the input of `local/style-video`."""
    fd, name = tempfile.mkstemp(suffix=".mp4")
    os.close(fd)
    try:
        with av.open(name, "w", format="mp4") as container:
            video = container.add_stream("libx264", rate=fps)
            video.width, video.height, video.pix_fmt = width, height, "yuv420p"
            audio = container.add_stream("aac", rate=16000, layout="mono")
            x = np.arange(width)
            for i in range(seconds * fps):
                bars = ((x[None, :] + i * 4) // 16 % 2 * 200 + 30).astype(np.uint8).repeat(height, 0)
                frame = av.VideoFrame.from_ndarray(np.stack([bars, 255 - bars, bars // 2], axis=-1), format="rgb24")
                frame.pts = i
                for packet in video.encode(frame):
                    container.mux(packet)
            tone = (np.sin(2 * np.pi * 440 * np.arange(seconds * 16000) / 16000) * 0.4).astype(np.float32)
            sound = av.AudioFrame.from_ndarray(tone.reshape(1, -1), format="flt", layout="mono")
            sound.sample_rate, sound.pts, sound.time_base = 16000, 0, Fraction(1, 16000)
            for packet in [*audio.encode(sound), *audio.encode(None), *video.encode(None)]:
                container.mux(packet)
        with open(name, "rb") as fh:
            return fh.read()
    finally:
        os.unlink(name)


def _load(runner_name: str, queue: Any) -> None:
    """Time the lazy load alone: the network or voice a model loads on its first task."""
    start = time.perf_counter()
    if runner_name == "piper-speech":
        from modelport.media.tasks.models import speech

        speech.voice()
    else:
        from modelport.media.tasks.models import network

        network.engine()
    queue.put(round(time.perf_counter() - start, 3))


def _run(runner_name: str, params: dict[str, Any], repeat: int, queue: Any) -> None:
    from modelport.media.tasks.models import task_model

    model = task_model(runner_name)
    assert model is not None
    inputs = (
        {"image_url": _photo()} if "image_url" in params else {"video_url": _clip()} if "video_url" in params else {}
    )
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
        loader = context.Process(target=_load, args=(runner_name, queue))
        loader.start()
        report[name]["load_s"] = queue.get(timeout=600)
        loader.join()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
