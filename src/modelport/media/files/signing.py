"""Signed, expiring download URLs: `{public_media_url}/files/{file_id}?expires=<unix s>&signature=<hmac>`.

The signature is HMAC-SHA256 over the file id and expiry, keyed with a key derived from the service
secret (so this key signs nothing else, e.g. webhooks). A URL is a bearer capability: whoever holds it
may download until it expires, with no API key, which is what lets models and asset providers fetch it.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from modelport.web.query_int import plain_int

DOWNLOAD_PATH = "/files/"
_FILE_ID = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


def derive_key(secret: str) -> bytes:
    return hmac.new(secret.encode(), b"modelport media file download v1", hashlib.sha256).digest()


def sign(key: bytes, file_id: str, expires_s: int) -> str:
    digest = hmac.new(key, f"{file_id}\n{expires_s}".encode(), hashlib.sha256).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def build_download_url(public_base: str, key: bytes, file_id: str, expires_at_ms: int) -> str:
    # Floor to the second: the link never outlives the file.
    expires_s = expires_at_ms // 1000
    signature = sign(key, file_id, expires_s)
    return f"{public_base.rstrip('/')}{DOWNLOAD_PATH}{file_id}?expires={expires_s}&signature={signature}"


def check_signature(key: bytes, file_id: str, expires: str | None, signature: str | None, now_ms: int) -> bool:
    """True when the signature is ours for this file and expiry, and the expiry has not passed."""
    expires_s = plain_int(expires) if expires and len(expires) <= 12 else None
    if expires_s is None or not signature:
        return False
    if expires_s * 1000 <= now_ms:
        return False
    return hmac.compare_digest(sign(key, file_id, expires_s), signature)


@dataclass(frozen=True, slots=True)
class DownloadRef:
    file_id: str
    expires: str | None
    signature: str | None


def parse_download_url(public_base: str, url: str) -> DownloadRef | None:
    """The parts of `url` if it points at our download route, else None (someone else's URL)."""
    base = urlsplit(public_base.rstrip("/"))
    try:
        parts = urlsplit(url.strip())
    except ValueError:  # e.g. an unclosed `[` of an IPv6 host: not a URL of ours (the URL check refuses it)
        return None
    if (parts.scheme.lower(), parts.netloc.lower()) != (base.scheme.lower(), base.netloc.lower()):
        return None
    prefix = base.path + DOWNLOAD_PATH
    if not parts.path.startswith(prefix):
        return None
    file_id = parts.path[len(prefix) :]
    if not _FILE_ID.match(file_id):
        return None
    query = parse_qs(parts.query)
    return DownloadRef(
        file_id=file_id,
        expires=query.get("expires", [None])[0],
        signature=query.get("signature", [None])[0],
    )
