"""Seconds per task and peak RSS of each embedded media model, rendered in this process as a worker would.

Each model runs in a fresh child process (so its peak RSS is its own): the first render includes loading
its network (the style-transfer network, or the Piper voice: what the first task after `serve` starts waits
for), the next ones do not. `load_s` is that load alone, timed before the first render in a second child.

    .venv/bin/python bench/media_bench.py [--repeat 3]

`--serve` measures memory through a real `modelport serve --workers 1` instead: the serving process's RSS
after start, its peak and the peak of its whole process tree (a render process included) while each
scenario's tasks render, and its RSS once the renders have idled out (`--idle-seconds`, passed as
`MODELPORT_TASKS__RENDER_IDLE_SECONDS`; `--settle-seconds` later). Run it with `PYTHONPATH=<other>/src`
to measure another checkout (a build before the render process existed: pass `--idle-seconds 0`, which
leaves the setting out).
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from fractions import Fraction
from pathlib import Path
from typing import Any

import _procs
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


# Through `serve`: tasks created together in each scenario (path, body); no URL inputs to host.
SERVE_SCENARIOS: dict[str, list[tuple[str, dict[str, Any]]]] = {
    "one local/sketch-image 768x512": [
        ("/local/sketch-image", {"prompt": "a lighthouse", "width": 768, "height": 512}),
    ],
    "two local/sketch-image 768x512 at once": [
        ("/local/sketch-image", {"prompt": "a harbour", "width": 768, "height": 512}),
        ("/local/sketch-image", {"prompt": "a forest", "width": 768, "height": 512}),
    ],
    "local/slideshow-video 512x288 4 s": [
        ("/local/slideshow-video", {"prompt": "a harbour", "width": 512, "height": 288, "fps": 24, "duration": 4})
    ],
    "local/piper-speech wav": [("/local/piper-speech", {"text": SPEECH})],
}


def _status(pid: int) -> dict[str, float]:
    """VmRSS, VmHWM and RssAnon of one process, MiB."""
    out: dict[str, float] = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM", "RssAnon"):
            out[key] = int(value.split()[0]) / 1024
    return out


def _tree_rss(pid: int) -> float:
    """RSS of `pid` and its descendants (a serving process's render process), MiB."""
    total = 0.0
    for member in _procs.descendants(pid):
        try:
            total += _status(member)["VmRSS"]
        except (OSError, KeyError):
            continue
    return total


def _call(url: str, key: str, body: dict[str, Any] | None = None) -> dict[str, Any]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, headers={"Authorization": f"Bearer {key}"})
    if data is not None:
        request.add_header("Content-Type", "application/json")
    with urllib.request.urlopen(request, timeout=60) as response:
        answer: dict[str, Any] = json.loads(response.read())["data"]
        return answer


def serve_memory(idle_seconds: float, settle_seconds: float) -> dict[str, Any]:
    data_dir = tempfile.mkdtemp(prefix="modelport-media-bench-")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
    env.update({"MODELPORT_DATA_DIR": data_dir, "MODELPORT_LOG_LEVEL": "WARNING", "MODELPORT_DEMO_BALANCE_USD": "50"})
    if idle_seconds > 0:
        env["MODELPORT_TASKS__RENDER_IDLE_SECONDS"] = str(idle_seconds)
    argv = [sys.executable, "-m", "modelport", "serve", "--workers", "1", "--media-port", "0", "--text-port", "0"]
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True)
    report: dict[str, Any] = {}
    try:
        assert process.stdout is not None
        media = key = None
        while key is None:
            line = process.stdout.readline()
            if not line:
                raise RuntimeError(f"serve exited with {process.wait()}")
            if m := re.match(r"^media host:\s+(http://\S+)", line):
                media = m.group(1)
            if m := re.match(r"^demo API key:\s+(\S+)", line):
                key = m.group(1)
        assert media is not None
        time.sleep(2.0)
        _call(media + "/api/v1/models", key)
        time.sleep(1.0)
        report["serving process after start, MiB"] = round(_status(process.pid)["VmRSS"], 1)
        for name, tasks in SERVE_SCENARIOS.items():
            report[name] = _scenario(process.pid, media, key, tasks, settle_seconds)
        report["serving process peak (VmHWM), MiB"] = round(_status(process.pid)["VmHWM"], 1)
    finally:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        shutil.rmtree(data_dir, ignore_errors=True)
    return report


def _scenario(pid: int, media: str, key: str, tasks: list[tuple[str, dict[str, Any]]], settle: float) -> dict[str, Any]:
    peaks = {"serve": 0.0, "tree": 0.0}
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            peaks["serve"] = max(peaks["serve"], _status(pid)["VmRSS"])
            peaks["tree"] = max(peaks["tree"], _tree_rss(pid))
            time.sleep(0.05)

    sampler = threading.Thread(target=sample)
    sampler.start()
    started = time.monotonic()
    try:
        ids = [_call(media + path, key, body)["task_id"] for path, body in tasks]
        while True:
            states = [_call(f"{media}/api/v1/tasks/{task_id}", key)["status"] for task_id in ids]
            if all(state in ("success", "failed", "cancelled") for state in states):
                break
            time.sleep(0.1)
        seconds = time.monotonic() - started
    finally:
        sampling.set()
        sampler.join()
    time.sleep(settle)
    after = _status(pid)
    return {
        "statuses": states,
        "seconds": round(seconds, 2),
        "serve_peak_mib": round(peaks["serve"], 1),
        "tree_peak_mib": round(peaks["tree"], 1),
        "serve_after_idle_mib": round(after["VmRSS"], 1),
        "serve_anon_after_idle_mib": round(after["RssAnon"], 1),
        "tree_after_idle_mib": round(_tree_rss(pid), 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--serve", action="store_true", help="measure memory through `modelport serve`")
    parser.add_argument("--idle-seconds", type=float, default=2.0, help="with --serve: render idle time (0: unset)")
    parser.add_argument("--settle-seconds", type=float, default=8.0, help="with --serve: wait after each scenario")
    args = parser.parse_args()
    if args.serve:
        print(json.dumps(serve_memory(args.idle_seconds, args.settle_seconds), indent=2))
        return
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
