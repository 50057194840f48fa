"""Usage conventions: input includes cache reads and writes; breakdowns are informational."""

from __future__ import annotations

from modelport.core import Usage
from modelport.core.usage import as_count


def test_uncached_input_excludes_cache_reads_and_writes() -> None:
    usage = Usage(input_tokens=1000, cache_read_tokens=600, cache_write_tokens=300, output_tokens=5)
    assert usage.uncached_input_tokens == 100
    assert usage.total_tokens == 1005


def test_uncached_never_negative_on_inconsistent_upstream_numbers() -> None:
    assert Usage(input_tokens=10, cache_read_tokens=20).uncached_input_tokens == 0


def test_addition_sums_every_field() -> None:
    a = Usage(
        input_tokens=1,
        output_tokens=2,
        cache_read_tokens=3,
        cache_write_tokens=4,
        reasoning_tokens=5,
        audio_input_tokens=6,
        video_input_tokens=7,
        image_input_tokens=8,
    )
    assert a + a == Usage(
        input_tokens=2,
        output_tokens=4,
        cache_read_tokens=6,
        cache_write_tokens=8,
        reasoning_tokens=10,
        audio_input_tokens=12,
        video_input_tokens=14,
        image_input_tokens=16,
    )


def test_as_count_accepts_only_non_negative_integers() -> None:
    assert [as_count(v) for v in (3, 3.0, None, "3", True, -2, 2.5)] == [3, 3, 0, 0, 0, 0, 0]
