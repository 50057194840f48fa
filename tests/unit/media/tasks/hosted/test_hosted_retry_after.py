"""`Retry-After` as hosted media providers send it: delta seconds, an HTTP date, nothing (exponential)."""

from __future__ import annotations

import email.utils
import time

from modelport.media.tasks.hosted.client import MAX_429_BACKOFF_SECONDS, MAX_RETRY_AFTER_SECONDS, retry_after_seconds


def test_delta_seconds_capped() -> None:
    assert retry_after_seconds("3", 0) == 3.0
    assert retry_after_seconds(" 0 ", 5) == 0.0
    assert retry_after_seconds("86400", 0) == MAX_RETRY_AFTER_SECONDS


def test_http_date() -> None:
    soon = email.utils.formatdate(time.time() + 10, usegmt=True)
    assert 8 <= retry_after_seconds(soon, 0) <= 10
    past = email.utils.formatdate(time.time() - 100, usegmt=True)
    assert retry_after_seconds(past, 0) == 0.0


def test_without_a_usable_header_backs_off_exponentially() -> None:
    assert [retry_after_seconds(None, n) for n in range(4)] == [1.0, 2.0, 4.0, 8.0]
    assert retry_after_seconds("soon", 0) == 1.0
    assert retry_after_seconds(None, 20) == MAX_429_BACKOFF_SECONDS
