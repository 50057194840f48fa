"""Retained payloads: exact JSON under the cap, a valid JSON marker within the cap above it."""

from __future__ import annotations

import json

import pytest

from modelport.requestlog.payloads import PayloadPolicy


def test_off_keeps_nothing() -> None:
    policy = PayloadPolicy(enabled=False)
    assert policy.payload({"a": 1}) is None
    assert policy.payload_from_json(b'{"a": 1}') is None


def test_small_payload_is_kept_exactly() -> None:
    policy = PayloadPolicy(enabled=True, max_bytes=1024)
    body = {"model": "openai/gpt-4o-mini", "messages": [{"role": "user", "content": "héllo ☃"}]}
    stored = policy.payload(body)
    assert stored is not None and json.loads(stored) == body
    raw = b'{"model": "x",  "input": "hi"}'
    assert policy.payload_from_json(raw) == raw.decode()


@pytest.mark.parametrize("filler", ["a", "é", "☃", "\x01", '"', "😀"])
def test_large_payload_becomes_a_marker_within_the_cap(filler: str) -> None:
    policy = PayloadPolicy(enabled=True, max_bytes=300)
    body = {"content": filler * 5000}
    full = json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    stored = policy.payload(body)
    assert stored is not None
    assert len(stored.encode()) <= 300
    marker = json.loads(stored)
    assert marker["truncated"] is True
    assert marker["size_bytes"] == len(full)
    assert marker["preview"] and full.decode().startswith(marker["preview"])
    # The preview uses most of the room it has rather than a token amount.
    assert len(stored.encode()) > 300 - 12


def test_raw_text_that_is_not_json_is_kept_as_a_string() -> None:
    policy = PayloadPolicy(enabled=True, max_bytes=1024)
    stored = policy.payload_from_json(b"not json \xff")
    assert stored is not None and json.loads(stored) == "not json \ufffd"


def test_unencodable_values_fall_back_to_text() -> None:
    policy = PayloadPolicy(enabled=True)
    stored = policy.payload({"when": object.__new__(object), 3: "x"})
    assert stored is not None
    decoded = json.loads(stored)
    assert decoded["3"] == "x" and decoded["when"].startswith("<object")


def test_cap_has_a_floor() -> None:
    with pytest.raises(ValueError):
        PayloadPolicy(enabled=True, max_bytes=10)
