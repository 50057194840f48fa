"""What a fetched file is, from its bytes alone, and whether the provider's limits accept it.

`probe(path, size)` reads headers only (Pillow `open`, PyAV container metadata) and raises `Rejected`
with a human reason when the file is not a supported image, video or audio file or is outside the
limits. `decode_fully(path, probed)` is the moderation pass: it decodes every frame and raises
`Rejected` when the content does not fully decode. Both are blocking: run them in a thread.

Limits (MB = 10^6 bytes), as the spec lists them; audio is ours (the spec leaves it open):

- image: jpeg, png, webp, tiff, gif, heic, heif; 300 < width, height < 6000 px; 0.4 < width/height
  < 2.5; size < 30 MB. A multi-image file (TIFF pages, GIF/WebP frames, HEIF sequences) is checked page
  by page, every page within those bounds, and at most `MAX_IMAGE_FRAMES` pages and
  `MAX_DECODED_PIXELS` pixels over all of them (moderation decodes every one).
- video: mp4 or mov with a video stream; the shorter side is 480, 720, 1080 or 2160 px (480p, 720p,
  1080p, 4K; portrait qualifies); 2 s <= duration <= 30 s; 0.4 <= width/height <= 2.5; 300 <= width,
  height <= 6000 px; 407,696 <= width x height <= 8,295,044; size <= 200 MB.
- audio: wav or mp3; 2 s <= duration <= 30 s; size <= 15 MB.
"""

from __future__ import annotations

import dataclasses
import warnings
from fractions import Fraction
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import filetype

if TYPE_CHECKING:
    import av
    from PIL import Image

MediaKind = Literal["image", "video", "audio"]
MB = 1_000_000

IMAGE_MAX_BYTES = 30 * MB  # exclusive: "below 30 MB"
VIDEO_MAX_BYTES = 200 * MB  # inclusive: "up to 200 MB"
AUDIO_MAX_BYTES = 15 * MB  # inclusive
MAX_BYTES: dict[MediaKind, int] = {"image": IMAGE_MAX_BYTES - 1, "video": VIDEO_MAX_BYTES, "audio": AUDIO_MAX_BYTES}

IMAGE_FORMATS = {
    "JPEG": "image/jpeg",
    "PNG": "image/png",
    "WEBP": "image/webp",
    "TIFF": "image/tiff",
    "GIF": "image/gif",
    "HEIF": "image/heif",
}
# Multi-image files: moderation decodes every page, so their number and their pixels together are capped
# (one page of the largest size is 36 MP; a file may hold about three of those, or many small frames).
MAX_IMAGE_FRAMES = 1000
MAX_DECODED_PIXELS = 100_000_000
VIDEO_CLASSES = {480: "480p", 720: "720p", 1080: "1080p", 2160: "4K"}
VIDEO_MIN_PIXELS, VIDEO_MAX_PIXELS = 407_696, 8_295_044
MIN_SECONDS, MAX_SECONDS = 2, 30

# PyAV, Pillow and pillow-heif (~30 MB resident) are imported by the first probe, not when a serving
# process starts (most never see an asset).
_heif_registered = False


def _register_heif() -> None:
    global _heif_registered
    if not _heif_registered:
        import pillow_heif

        pillow_heif.register_heif_opener()
        _heif_registered = True


# Pillow's own decompression-bomb guard stays at its default (it is process-wide): `open` reads headers
# only, our dimension limits are checked before any pixel is decoded, so moderation never loads more
# than 6000 x 6000.


class Rejected(Exception):
    """The provider does not accept this file; `reason` says why (shown to the client)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclasses.dataclass(frozen=True, slots=True)
class Probed:
    kind: MediaKind
    mime_type: str
    size_bytes: int
    width: int | None = None
    height: int | None = None
    duration_s: float | None = None
    frames: int | None = None  # video frames the container declares


def probe(path: Path, size_bytes: int) -> Probed:
    """Identify the file from its bytes and check the limits of its kind; raises Rejected."""
    with path.open("rb") as fh:
        head = fh.read(262)
    if not head:
        raise Rejected("the file is empty")
    guessed = filetype.guess(head)
    mime = guessed.mime if guessed is not None else ""
    if mime.startswith("image/") or _is_heif(head):
        return _probe_image(path, size_bytes)
    if mime in ("video/mp4", "video/quicktime"):
        return _probe_video(path, size_bytes, mime)
    if mime in ("audio/x-wav", "audio/mpeg"):
        return _probe_audio(path, size_bytes, "audio/wav" if mime == "audio/x-wav" else "audio/mpeg")
    raise Rejected(
        "the file is not a supported image (jpeg, png, webp, tiff, gif, heic, heif), "
        "video (mp4, mov) or audio (wav, mp3) file"
    )


def _is_heif(head: bytes) -> bool:
    return head[4:8] == b"ftyp" and head[8:12] in (b"heic", b"heix", b"heim", b"heis", b"mif1", b"msf1")


def _probe_image(path: Path, size: int) -> Probed:
    if size >= IMAGE_MAX_BYTES:
        raise Rejected(f"the image is {size} bytes; images must be below 30 MB (30,000,000 bytes)")
    from PIL import Image, UnidentifiedImageError

    _register_heif()
    try:
        with warnings.catch_warnings():
            # Over Pillow's warning size the dimension check below rejects it anyway.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as img:
                fmt, (width, height) = img.format or "", img.size
                _check_pages(img)
    except (
        UnidentifiedImageError,
        OSError,
        ValueError,
        SyntaxError,
        Image.DecompressionBombError,
    ) as exc:
        raise Rejected(f"the image cannot be read ({_short(exc)})") from exc
    if fmt not in IMAGE_FORMATS:
        raise Rejected(f"image format {fmt or 'unknown'} is not supported (jpeg, png, webp, tiff, gif, heic, heif)")
    _check_dimensions(width, height)
    mime = IMAGE_FORMATS[fmt]
    if fmt == "HEIF":
        with path.open("rb") as fh:
            mime = "image/heic" if fh.read(12)[8:12] in (b"heic", b"heix", b"heim", b"heis") else "image/heif"
    return Probed("image", mime, size, width, height)


def _check_dimensions(width: int, height: int, which: str = "the image") -> None:
    if not (300 < width < 6000 and 300 < height < 6000):
        raise Rejected(f"{which} is {width}x{height} px; width and height must each be over 300 and under 6000")
    ratio = Fraction(width, height)
    if not Fraction(2, 5) < ratio < Fraction(5, 2):
        raise Rejected(f"{which}'s aspect ratio {width}:{height} must be over 0.4 and under 2.5")


def _check_pages(img: Image.Image) -> None:
    """Every page of a multi-image file within the limits, and all of them within the decode caps. GIF, WebP
    and APNG frames lie within the canvas (its size is checked, times their number: seeking them would
    decode); TIFF pages and HEIF images each have their own size, read by seeking, which reads a page's
    header, not its pixels."""
    frames = int(getattr(img, "n_frames", 1) or 1)
    if frames == 1:
        return
    if frames > MAX_IMAGE_FRAMES:
        raise Rejected(f"the image has {frames} pages or frames; at most {MAX_IMAGE_FRAMES} are accepted")
    width, height = img.size
    if img.format in ("GIF", "WEBP", "PNG"):  # frames within the canvas; seeking these decodes
        sizes = [(width, height)] * frames
    else:
        sizes = []
        for index in range(frames):
            img.seek(index)
            sizes.append(img.size)
        img.seek(0)
    total = 0
    for index, (w, h) in enumerate(sizes):
        _check_dimensions(w, h, f"page {index + 1} of the image")
        total += w * h
    if total > MAX_DECODED_PIXELS:
        raise Rejected(
            f"the image's {frames} pages hold {total:,} pixels; at most {MAX_DECODED_PIXELS:,} are accepted per file"
        )


def _probe_video(path: Path, size: int, mime: str) -> Probed:
    if size > VIDEO_MAX_BYTES:
        raise Rejected(f"the video is {size} bytes; videos must be at most 200 MB (200,000,000 bytes)")
    import av.error

    try:
        with av.open(str(path), "r") as container:
            if "mov" not in container.format.name.split(","):
                raise Rejected("the video must be mp4 or mov")
            streams = container.streams.video
            if not streams:
                raise Rejected("the file has no video stream")
            stream = streams[0]
            width, height = stream.codec_context.width, stream.codec_context.height
            duration = _duration(container, stream)
            frames = stream.frames or None
    except av.error.FFmpegError as exc:
        raise Rejected(f"the video cannot be read ({_short(exc)})") from exc
    if not width or not height:
        raise Rejected("the video has no frame size")
    short = min(width, height)
    if short not in VIDEO_CLASSES:
        raise Rejected(
            f"the video is {width}x{height}; its shorter side must be 480, 720, 1080 or 2160 px "
            "(480p, 720p, 1080p or 4K)"
        )
    if not (300 <= width <= 6000 and 300 <= height <= 6000):
        raise Rejected(f"the video is {width}x{height} px; width and height must each be 300 to 6000")
    if not VIDEO_MIN_PIXELS <= width * height <= VIDEO_MAX_PIXELS:
        raise Rejected(
            f"the video is {width}x{height} = {width * height} pixels; "
            f"width x height must be {VIDEO_MIN_PIXELS:,} to {VIDEO_MAX_PIXELS:,}"
        )
    if not Fraction(2, 5) <= Fraction(width, height) <= Fraction(5, 2):
        raise Rejected(f"the video's aspect ratio {width}:{height} must be 0.4 to 2.5")
    _check_duration("video", duration)
    return Probed("video", mime, size, width, height, duration, frames)


def _probe_audio(path: Path, size: int, mime: str) -> Probed:
    if size > AUDIO_MAX_BYTES:
        raise Rejected(f"the audio is {size} bytes; audio files must be at most 15 MB (15,000,000 bytes)")
    import av.error

    try:
        with av.open(str(path), "r") as container:
            if container.format.name not in ("wav", "mp3"):
                raise Rejected("the audio must be wav or mp3")
            if not container.streams.audio:
                raise Rejected("the file has no audio stream")
            duration = _duration(container, container.streams.audio[0])
    except av.error.FFmpegError as exc:
        raise Rejected(f"the audio cannot be read ({_short(exc)})") from exc
    _check_duration("audio", duration)
    return Probed("audio", mime, size, duration_s=duration)


def _duration(container: av.container.InputContainer, stream: av.stream.Stream) -> float | None:
    if stream.duration is not None and stream.time_base is not None:
        return float(stream.duration * stream.time_base)
    if container.duration is not None:
        import av

        return container.duration / av.time_base
    return None


def _check_duration(kind: str, duration: float | None) -> None:
    if duration is None:
        raise Rejected(f"the {kind}'s duration cannot be read")
    if not MIN_SECONDS <= round(duration, 3) <= MAX_SECONDS:
        raise Rejected(f"the {kind} lasts {duration:.3f} s; it must last {MIN_SECONDS} to {MAX_SECONDS} seconds")


# -- moderation: decode everything ----------------------------------------------------------------


def decode_fully(path: Path, probed: Probed) -> None:
    """Decode every frame (every image frame, video frame, audio frame); raises Rejected if any fails."""
    import av.error
    from PIL import Image

    _register_heif()
    try:
        if probed.kind == "image":
            _decode_image(path)
        elif probed.kind == "video":
            _decode_video(path, probed)
        else:
            _decode_audio(path, probed)
    except Rejected:
        raise
    except (av.error.FFmpegError, OSError, ValueError, SyntaxError, EOFError, Image.DecompressionBombError) as exc:
        raise Rejected(f"the {probed.kind} does not fully decode ({_short(exc)})") from exc


def _decode_image(path: Path) -> None:
    from PIL import Image, ImageSequence

    decoded = 0
    with Image.open(path) as img:
        for frame in ImageSequence.Iterator(img):
            # The probe checked every page; counted again before each decode, whatever the file claims now.
            width, height = frame.size
            decoded += width * height
            if not (width < 6000 and height < 6000) or decoded > MAX_DECODED_PIXELS:
                raise Rejected(f"the image holds more than {MAX_DECODED_PIXELS:,} pixels or a page over 6000 px")
            frame.load()


def _decode_video(path: Path, probed: Probed) -> None:
    import av

    decoded = 0
    with av.open(str(path), "r") as container:
        stream = container.streams.video[0]
        stream.codec_context.options = {"err_detect": "explode"}
        for _frame in container.decode(stream):
            decoded += 1
    if decoded == 0:
        raise Rejected("the video has no decodable frame")
    if probed.frames is not None and decoded < probed.frames:
        raise Rejected(f"the video does not fully decode ({decoded} of {probed.frames} frames)")


def _decode_audio(path: Path, probed: Probed) -> None:
    import av

    seconds = 0.0
    with av.open(str(path), "r") as container:
        stream = container.streams.audio[0]
        for frame in container.decode(stream):
            seconds += frame.samples / (frame.sample_rate or 1)
    expected = probed.duration_s or 0.0
    if seconds < MIN_SECONDS or seconds < expected * 0.9:
        raise Rejected(f"the audio does not fully decode ({seconds:.2f} of {expected:.2f} s)")


def _short(exc: BaseException) -> str:
    text = str(exc).strip() or type(exc).__name__
    return text if len(text) <= 160 else text[:157] + "..."
