"""Media type detection from the first bytes of a file (never from its name or declared type).

`filetype` matches magic numbers and container structure (it reads the ISO-BMFF `ftyp` brand, so an
M4A is audio and an MP4 is video). Only the formats below are accepted: the ones media and text models
consume. Anything else (PDF, archives, Photoshop, DICOM, text...) is rejected by the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import filetype

MediaType = Literal["image", "video", "audio"]

# How many leading bytes detection needs; filetype never looks further.
SNIFF_BYTES = 8192


@dataclass(frozen=True, slots=True)
class DetectedMedia:
    type: MediaType
    mime_type: str
    extension: str


# filetype's MIME → (our media type, the MIME type we serve, a file extension).
_ACCEPTED: dict[str, tuple[MediaType, str, str]] = {
    "image/jpeg": ("image", "image/jpeg", "jpg"),
    "image/png": ("image", "image/png", "png"),
    "image/apng": ("image", "image/apng", "png"),
    "image/gif": ("image", "image/gif", "gif"),
    "image/webp": ("image", "image/webp", "webp"),
    "image/bmp": ("image", "image/bmp", "bmp"),
    "image/tiff": ("image", "image/tiff", "tif"),
    "image/heic": ("image", "image/heic", "heic"),
    "image/avif": ("image", "image/avif", "avif"),
    "video/mp4": ("video", "video/mp4", "mp4"),
    "video/x-m4v": ("video", "video/x-m4v", "m4v"),
    "video/quicktime": ("video", "video/quicktime", "mov"),
    "video/webm": ("video", "video/webm", "webm"),
    "video/x-matroska": ("video", "video/x-matroska", "mkv"),
    "video/x-msvideo": ("video", "video/x-msvideo", "avi"),
    "video/mpeg": ("video", "video/mpeg", "mpg"),
    "video/3gpp": ("video", "video/3gpp", "3gp"),
    "video/x-flv": ("video", "video/x-flv", "flv"),
    "video/x-ms-wmv": ("video", "video/x-ms-wmv", "wmv"),
    "audio/mpeg": ("audio", "audio/mpeg", "mp3"),
    "audio/x-wav": ("audio", "audio/wav", "wav"),
    "audio/x-flac": ("audio", "audio/flac", "flac"),
    "audio/ogg": ("audio", "audio/ogg", "ogg"),
    "audio/aac": ("audio", "audio/aac", "aac"),
    "audio/mp4": ("audio", "audio/mp4", "m4a"),
    "audio/amr": ("audio", "audio/amr", "amr"),
    "audio/x-aiff": ("audio", "audio/aiff", "aiff"),
}


def detect_media(head: bytes) -> DetectedMedia | None:
    """The accepted media kind of a file starting with `head` (its first SNIFF_BYTES bytes), or None."""
    if not head:
        return None
    kind = filetype.guess(head[:SNIFF_BYTES])
    if kind is None:
        return None
    accepted = _ACCEPTED.get(str(kind.mime))
    if accepted is None:
        return None
    media_type, mime_type, extension = accepted
    return DetectedMedia(type=media_type, mime_type=mime_type, extension=extension)
