"""Inline-media rules shared by every protocol decoder (pure functions, no I/O).

The interface allows inline media as a one-line ``data:<mime>;base64,<payload>`` value, caps uploads at
16 MB and rejects provider-side file ids (``file-...``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from modelport.errors import InvalidParameters

INLINE_MEDIA_MAX_BYTES = 16 * 1024 * 1024

_DATA_URL = re.compile(
    r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)?(?P<params>(?:;[\w.+-]+=[^;,]*)*);base64,(?P<data>.*)$", re.S
)


def parse_data_url(value: str) -> tuple[str | None, str] | None:
    """Split a base64 ``data:`` URL into (media type, base64 payload); None if `value` is not one."""
    if not value.startswith("data:"):
        return None
    m = _DATA_URL.match(value)
    if m is None:
        return None
    return m.group("mime"), m.group("data")


_BASE64 = re.compile(r"[A-Za-z0-9+/\-_\s]*={0,2}\s*")


def check_base64(b64: str, param: str) -> None:
    """Reject a payload that is not base64 (standard or URL-safe alphabet), naming the field."""
    if not b64 or _BASE64.fullmatch(b64) is None:
        raise InvalidParameters(f"Invalid '{param}': expected base64-encoded data.", param=param)


def decoded_size(b64: str) -> int:
    """Size in bytes of the data a base64 string decodes to (without decoding it)."""
    n = len(b64.rstrip("="))
    return n * 3 // 4


def check_inline_media(b64: str, param: str) -> None:
    """Validate an inline base64 payload: base64 alphabet and the 16 MB limit."""
    check_inline_size(b64, param)
    check_base64(b64, param)


def check_inline_size(b64: str, param: str) -> None:
    """Reject inline media over the 16 MB limit, naming the offending field."""
    if decoded_size(b64) > INLINE_MEDIA_MAX_BYTES:
        raise InvalidParameters(
            f"Invalid '{param}': inline data exceeds the {INLINE_MEDIA_MAX_BYTES // (1024 * 1024)} MB limit.",
            param=param,
        )


def is_provider_file_id(value: str) -> bool:
    """True for provider-side file ids such as ``file-abc123`` (rejected by this service with a 400)."""
    return value.startswith("file-")


def is_remote_url(value: str) -> bool:
    """True for http(s) URLs. Anything else that is not a data: URL is a local path, which the interface
    says is ignored (decoders drop such parts)."""
    head = value[:8].lower()
    return head.startswith("https://") or head.startswith("http://")


def inline_data_url(value: str, param: str) -> tuple[str | None, str]:
    """(media type, base64 payload) of a ``data:`` URL, validated (alphabet, 16 MB); 400 if malformed."""
    parsed = parse_data_url(value)
    if parsed is None:
        raise InvalidParameters(
            f"Invalid value for '{param}': expected a base64 data: URL (data:<mime>;base64,...).", param=param
        )
    media_type, data = parsed
    check_inline_media(data, param)
    return media_type, data


def refuse_provider_file_id(value: str, param: str) -> None:
    if is_provider_file_id(value):
        raise InvalidParameters(
            f"Invalid value for '{param}': provider file ids ('file-...') are not supported; pass a public "
            "HTTPS URL or a base64 data: URL.",
            param=param,
        )


@dataclass(frozen=True, slots=True)
class MediaRef:
    """Where a media part's bytes are: inline (`data`, `media_type`) or at a remote `url`."""

    url: str | None = None
    data: str | None = None
    media_type: str | None = None


def media_reference(value: str, param: str) -> MediaRef | None:
    """The interface's rules for a media reference (OpenAI protocols' image and file URLs), in order: a
    ``data:`` URL is inline media (validated); a provider file id is refused (400); an http(s) URL stays a
    URL; anything else is a local path, ignored (None)."""
    if value.startswith("data:"):
        media_type, data = inline_data_url(value, param)
        return MediaRef(data=data, media_type=media_type)
    refuse_provider_file_id(value, param)
    if not is_remote_url(value):
        return None
    return MediaRef(url=value)
