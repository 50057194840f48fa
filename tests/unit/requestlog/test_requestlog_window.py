"""Window segments and page seeking, checked against a brute-force listing of random rows."""

from __future__ import annotations

import random
from collections import Counter
from itertools import pairwise

import pytest

from modelport.requestlog.query import plan_window, seek, segments_newest_first
from modelport.requestlog.store import HOUR_MS

BASE = 1_700_000_000_000 - 1_700_000_000_000 % HOUR_MS


H = HOUR_MS
B = BASE // HOUR_MS


@pytest.mark.parametrize(
    ("lo", "hi", "hours", "newer", "older"),
    [
        # Aligned both ends: whole hours only.
        (BASE, BASE + 3 * H, (B, B + 3), None, None),
        # Partial hours at both ends around two whole hours.
        (BASE + 5, BASE + 3 * H + 7, (B + 1, B + 3), (BASE + 3 * H, BASE + 3 * H + 7), (BASE + 5, BASE + H)),
        # No whole hour inside (even across an hour boundary): the window is a single edge.
        (BASE + 5, BASE + H + 7, None, (BASE + 5, BASE + H + 7), None),
        (BASE + 5, BASE + 70, None, (BASE + 5, BASE + 70), None),
    ],
)
def test_plan_window(
    lo: int, hi: int, hours: tuple[int, int] | None, newer: tuple[int, int] | None, older: tuple[int, int] | None
) -> None:
    plan = plan_window(lo, hi)
    if hours is None:
        assert plan.first_hour == plan.end_hour
    else:
        assert (plan.first_hour, plan.end_hour) == hours
    assert (plan.newer_edge, plan.older_edge) == (newer, older)


@pytest.mark.parametrize("seed", range(30))
def test_segments_and_seek_agree_with_brute_force(seed: int) -> None:
    rng = random.Random(seed)
    times = sorted(BASE + rng.randrange(0, 10 * HOUR_MS) for _ in range(rng.randrange(0, 400)))
    lo = BASE + rng.randrange(0, 5 * HOUR_MS)
    hi = lo + rng.randrange(1, 6 * HOUR_MS)
    inside = sorted((t for t in times if lo <= t < hi), reverse=True)

    plan = plan_window(lo, hi)
    hours = Counter(t // HOUR_MS for t in times)  # the counters cover every row, also outside the window

    def count(edge: tuple[int, int] | None) -> int:
        return 0 if edge is None else sum(1 for t in times if edge[0] <= t < edge[1])

    segments = segments_newest_first(plan, dict(hours), count(plan.newer_edge), count(plan.older_edge))
    assert sum(s.rows for s in segments) == len(inside)
    assert all(a.lo_ms >= b.hi_ms for a, b in pairwise(segments))

    for offset in sorted({0, 1, len(inside) // 2, max(0, len(inside) - 1), len(inside), len(inside) + 5}):
        found = seek(segments, offset)
        if offset >= len(inside):
            assert found is None
            continue
        assert found is not None
        upper, skip = found
        below = sorted((t for t in times if lo <= t < upper), reverse=True)
        assert below[skip] == inside[offset]
