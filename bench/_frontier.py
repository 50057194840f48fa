"""The pure parts of `frontier_bench.py`: percentiles, the throughput frontier, the stream judgement and sweeps.

Nothing here measures or starts anything, so it is unit-tested directly (tests/unit/support/test_bench_frontier.py).
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

# One content frame of a stream, whatever the protocol: the fake upstream's words are "w0 ", "w1 ", ... and every
# protocol carries each as a JSON string of its own ("content" / "delta" / "text"), so a frame is a string that
# starts with a word. A closing event that repeats the whole text ("w0 w1 ...") only matches its first word,
# which was already seen.
FRAME_RE = re.compile(rb'"w(\d+) ')


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile: the smallest value with at least a share `q` of the values at or below it."""
    if not 0 < q <= 1:
        raise ValueError(f"q must be in (0, 1], not {q}")
    if not values:
        return math.nan
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


@dataclass(frozen=True)
class Rung:
    """One closed-loop phase of a concurrency sweep."""

    concurrency: int
    rps: float
    p99_ms: float
    errors: int


@dataclass(frozen=True)
class FrontierPoint:
    """The most requests/s a lane carried with its added p99 within `bound_ms` (rps 0: no rung qualified).

    `floor`: the best rung was the sweep's last, so more might have qualified (nothing above it was probed)."""

    bound_ms: float
    rps: float
    concurrency: int | None
    added_p99_ms: float | None
    floor: bool


def added_p99(rung: Rung, direct: Sequence[Rung]) -> float | None:
    """The rung's p99 minus the direct call's at the same concurrency (None: direct was not measured there)."""
    base = next((d for d in direct if d.concurrency == rung.concurrency), None)
    return None if base is None else rung.p99_ms - base.p99_ms


def frontier(rungs: Sequence[Rung], direct: Sequence[Rung], bounds: Sequence[float]) -> list[FrontierPoint]:
    """Per bound, the highest requests/s over the rungs that failed no request and added at most `bound` ms of
    p99 over direct. A maximum over sets that only grow as the bound relaxes: monotone by construction."""
    out: list[FrontierPoint] = []
    last = max((r.concurrency for r in rungs), default=None)
    for bound in bounds:
        best: tuple[Rung, float] | None = None
        for rung in rungs:
            added = added_p99(rung, direct)
            if rung.errors or added is None or added > bound:
                continue
            if best is None or rung.rps > best[0].rps:
                best = (rung, added)
        if best is None:
            out.append(FrontierPoint(bound, 0.0, None, None, False))
        else:
            rung, added = best
            out.append(FrontierPoint(bound, rung.rps, rung.concurrency, added, rung.concurrency == last))
    return out


def frontier_sweep_done(rung: Rung, direct: Sequence[Rung], max_bound: float) -> bool:
    """Whether a frontier sweep can stop after `rung`: it failed requests or is past the largest bound (a higher
    concurrency only queues more: its p99 grows, so no bound could take it)."""
    added = added_p99(rung, direct)
    return rung.errors > 0 or added is None or added > max_bound


def saturated_sweep_done(rungs: Sequence[Rung], gain: float = 1.05) -> bool:
    """Whether an unbounded sweep (sustained req/s) can stop: the last rung failed requests, or carried less than
    `gain` times the best rung before it (the server is saturated; more concurrency only queues)."""
    if not rungs:
        return False
    if rungs[-1].errors:
        return True
    before = [r.rps for r in rungs[:-1] if not r.errors]
    return bool(before) and rungs[-1].rps < gain * max(before)


def sustained_rps(rungs: Sequence[Rung]) -> float:
    """The most requests/s any rung carried without failing a request (the unbounded reading)."""
    return max((r.rps for r in rungs if not r.errors), default=0.0)


# ---------------------------------------------------------------- streams


def frame_times(reads: Sequence[tuple[float, bytes]]) -> list[float]:
    """When each content frame arrived: frame k's time is that of the read holding the end of its first marker
    (a marker may be split across reads). Index k is the frame's word number; a frame never seen is NaN."""
    joined = b"".join(chunk for _, chunk in reads)
    ends: list[int] = []
    offset = 0
    for _, chunk in reads:
        offset += len(chunk)
        ends.append(offset)
    seen: dict[int, float] = {}
    read = 0
    for match in FRAME_RE.finditer(joined):
        index = int(match.group(1))
        while ends[read] < match.end():
            read += 1
        seen.setdefault(index, reads[read][0])
    count = max(seen, default=-1) + 1
    return [seen.get(i, math.nan) for i in range(count)]


def frame_gaps(times: Sequence[float]) -> list[float]:
    return [b - a for a, b in itertools.pairwise(times)]


def stream_sustained(times: Sequence[float], expected: int, pace_s: float, factor: float) -> bool:
    """A stream is sustained when every expected frame arrived, in order, and no gap between two frames was
    longer than `factor` times the upstream's pace."""
    if len(times) != expected or any(math.isnan(t) for t in times):
        return False
    gaps = frame_gaps(times)
    return all(0 <= gap <= factor * pace_s for gap in gaps)


def stream_rung_passes(sustained: int, total: int, errors: int, min_share: float) -> bool:
    """A concurrency holds its streams when none failed and at least `min_share` of them were sustained."""
    return total > 0 and errors == 0 and sustained >= min_share * total


@dataclass(frozen=True)
class StreamCeiling:
    """The most concurrent streams held: the highest passing concurrency below the lowest failing one.
    `floor`: no rung failed, so the sweep's top is a floor, not the ceiling."""

    streams: int
    floor: bool


def stream_ceiling(results: dict[int, bool]) -> StreamCeiling:
    failing = [c for c, ok in results.items() if not ok]
    lowest_fail = min(failing, default=None)
    passing = [c for c, ok in results.items() if ok and (lowest_fail is None or c < lowest_fail)]
    return StreamCeiling(max(passing, default=0), lowest_fail is None and bool(passing))


def next_stream_rung(results: dict[int, bool], ladder: Sequence[int], refine: int) -> int | None:
    """The next concurrency to try: up the ladder until a rung fails, then up to `refine` bisections (geometric
    midpoints) between the highest passing and the lowest failing rung; None when done."""
    if not results:
        return ladder[0] if ladder else None
    lowest_fail = min((c for c, ok in results.items() if not ok), default=None)
    if lowest_fail is None:
        return next((c for c in ladder if c > max(results)), None)
    on_ladder = sum(1 for c in results if c in ladder)
    if len(results) - on_ladder >= refine:
        return None
    high_pass = max((c for c, ok in results.items() if ok and c < lowest_fail), default=0)
    if high_pass == 0:
        return None  # the first rung failed: nothing to bisect
    mid = round(math.sqrt(high_pass * lowest_fail))
    return mid if high_pass < mid < lowest_fail and mid not in results else None
