"""Inline media rules: data: URLs, base64, the 16 MB limit, provider file ids, remote URLs."""

from __future__ import annotations

import base64

import pytest

from modelport.core.media import (
    INLINE_MEDIA_MAX_BYTES,
    check_inline_media,
    decoded_size,
    is_provider_file_id,
    is_remote_url,
    parse_data_url,
)
from modelport.errors import InvalidParameters


def test_parse_data_url() -> None:
    assert parse_data_url("data:image/png;base64,iVBORw0=") == ("image/png", "iVBORw0=")
    assert parse_data_url("data:application/pdf;name=a.pdf;base64,JVBE") == ("application/pdf", "JVBE")
    assert parse_data_url("data:;base64,AAAA") == (None, "AAAA")
    assert parse_data_url("data:text/plain,hello") is None  # not base64
    assert parse_data_url("https://example.com/a.png") is None


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 5, 100, 1001])
def test_decoded_size_matches_real_decoding(n: int) -> None:
    b64 = base64.b64encode(b"x" * n).decode()
    assert decoded_size(b64) == len(base64.b64decode(b64)) == n


def test_limit_is_on_decoded_bytes() -> None:
    exactly = base64.b64encode(b"\0" * INLINE_MEDIA_MAX_BYTES).decode()
    check_inline_media(exactly, "p")
    with pytest.raises(InvalidParameters) as caught:
        check_inline_media(exactly + "AAAA", "p")
    assert caught.value.param == "p"


def test_ids_and_urls() -> None:
    assert is_provider_file_id("file-abc") and not is_provider_file_id("https://x/file-abc")
    assert is_remote_url("HTTPS://example.com") and is_remote_url("http://example.com")
    assert not is_remote_url("/etc/passwd") and not is_remote_url("file:///etc/passwd")
