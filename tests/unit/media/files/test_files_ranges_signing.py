"""Range header parsing and download URL signatures."""

from __future__ import annotations

import pytest

from modelport.errors import RangeNotSatisfiable
from modelport.media.files.ranges import ByteRange, parse_range
from modelport.media.files.signing import (
    build_download_url,
    check_signature,
    derive_key,
    parse_download_url,
)


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("bytes=0-9", ByteRange(0, 10)),
        ("bytes=10-", ByteRange(10, 100)),
        ("bytes=-5", ByteRange(95, 100)),
        ("bytes=-500", ByteRange(0, 100)),
        ("bytes=90-500", ByteRange(90, 100)),
        ("BYTES = 3 - 3", ByteRange(3, 4)),
        (None, None),
        ("", None),
        ("bytes=0-1,5-6", None),  # several ranges: whole file
        ("items=0-1", None),
        ("bytes=9-3", None),  # invalid spec: ignored
        ("bytes=-", None),
    ],
)
def test_parse_range(header: str | None, expected: ByteRange | None) -> None:
    assert parse_range(header, 100) == expected


@pytest.mark.parametrize("header", ["bytes=100-", "bytes=150-200", "bytes=-0"])
def test_unsatisfiable_range_carries_content_range(header: str) -> None:
    with pytest.raises(RangeNotSatisfiable) as info:
        parse_range(header, 100)
    assert info.value.status == 416
    assert info.value.headers == {"Content-Range": "bytes */100"}


def test_any_range_of_an_empty_file_is_unsatisfiable() -> None:
    with pytest.raises(RangeNotSatisfiable):
        parse_range("bytes=0-", 0)


def test_content_range_header() -> None:
    assert ByteRange(10, 20).content_range(100) == "bytes 10-19/100"


KEY = derive_key("s3cret")
NOW_MS = 1_700_000_000_000


def test_signed_url_round_trip() -> None:
    url = build_download_url("https://media.example.com", KEY, "file_abc", NOW_MS + 60_000)
    assert url.startswith("https://media.example.com/files/file_abc?expires=")
    ref = parse_download_url("https://media.example.com/", url)
    assert ref is not None and ref.file_id == "file_abc"
    assert check_signature(KEY, ref.file_id, ref.expires, ref.signature, NOW_MS)
    # Expired, wrong key, other file, tampered expiry: all refused.
    assert not check_signature(KEY, ref.file_id, ref.expires, ref.signature, NOW_MS + 61_000)
    assert not check_signature(derive_key("other"), ref.file_id, ref.expires, ref.signature, NOW_MS)
    assert not check_signature(KEY, "file_abd", ref.expires, ref.signature, NOW_MS)
    assert ref.expires is not None
    assert not check_signature(KEY, ref.file_id, str(int(ref.expires) + 3600), ref.signature, NOW_MS)
    assert not check_signature(KEY, ref.file_id, None, ref.signature, NOW_MS)
    assert not check_signature(KEY, ref.file_id, "-5", ref.signature, NOW_MS)


def test_signed_url_keeps_a_path_prefix_of_the_public_base() -> None:
    url = build_download_url("https://cdn.example.com/media", KEY, "file_x", NOW_MS + 1000)
    assert url.startswith("https://cdn.example.com/media/files/file_x?")
    assert parse_download_url("https://cdn.example.com/media", url) is not None
    assert parse_download_url("https://cdn.example.com", url) is None


@pytest.mark.parametrize(
    "url",
    [
        "https://elsewhere.example.com/files/file_abc?expires=1&signature=x",
        "http://media.example.com/files/file_abc?expires=1&signature=x",
        "https://media.example.com/other/file_abc",
        "https://media.example.com/files/../etc/passwd",
        "https://media.example.com/files/",
    ],
)
def test_foreign_urls_are_not_ours(url: str) -> None:
    assert parse_download_url("https://media.example.com", url) is None
