"""The frontier bench's pure parts: percentiles, the throughput frontier, the stream judgement and the sweeps.

No timing: every latency, rate and arrival time here is a made-up number.
"""

from __future__ import annotations

import math

import pytest
from bench._frontier import (
    Rung,
    frame_times,
    frontier,
    frontier_sweep_done,
    next_stream_rung,
    percentile,
    saturated_sweep_done,
    stream_ceiling,
    stream_rung_passes,
    stream_sustained,
    sustained_rps,
)


def test_percentile_is_nearest_rank() -> None:
    values = [float(v) for v in range(100, 0, -1)]  # 100 .. 1, unsorted on purpose
    assert percentile(values, 0.99) == 99.0
    assert percentile(values, 0.5) == 50.0
    assert percentile(values, 1.0) == 100.0
    assert percentile([7.0], 0.99) == 7.0
    assert percentile([1.0, 2.0, 3.0, 4.0, 1000.0], 0.99) == 1000.0  # 5 values: the 99th is the largest
    assert math.isnan(percentile([], 0.99))
    with pytest.raises(ValueError):
        percentile([1.0], 0.0)


DIRECT = [Rung(1, 2000.0, 0.5, 0), Rung(4, 6000.0, 0.8, 0), Rung(16, 9000.0, 2.0, 0), Rung(64, 9500.0, 8.0, 0)]


def test_frontier_takes_the_fastest_rung_within_each_bound() -> None:
    lane = [
        Rung(1, 1500.0, 0.9, 0),  # +0.4
        Rung(4, 4000.0, 3.8, 0),  # +3.0
        Rung(16, 5000.0, 9.0, 0),  # +7.0
        Rung(64, 5200.0, 70.0, 0),  # +62.0: past every bound
    ]
    points = frontier(lane, DIRECT, [1.0, 5.0, 10.0, 50.0])
    assert [(p.bound_ms, p.rps, p.concurrency) for p in points] == [
        (1.0, 1500.0, 1),
        (5.0, 4000.0, 4),
        (10.0, 5000.0, 16),
        (50.0, 5000.0, 16),
    ]
    assert points[0].added_p99_ms == pytest.approx(0.4)
    assert not any(p.floor for p in points)  # a rung above them was probed


def test_frontier_skips_rungs_with_errors_and_reports_zero_and_floors() -> None:
    lane = [Rung(1, 300.0, 6.5, 0), Rung(4, 900.0, 9.0, 3), Rung(16, 1000.0, 40.0, 0)]
    points = frontier(lane, DIRECT, [1.0, 10.0, 50.0])
    assert points[0].rps == 0.0 and points[0].concurrency is None  # +6 ms at c=1: nothing within 1 ms
    assert points[1].rps == 300.0  # c=4 added 8.2 ms but failed 3 requests
    assert (points[2].rps, points[2].concurrency, points[2].floor) == (1000.0, 16, True)  # the last rung probed
    # A rung without a direct measurement at its concurrency is never counted.
    assert frontier([Rung(2, 5000.0, 0.6, 0)], DIRECT, [50.0])[0].rps == 0.0


def test_frontier_never_falls_as_the_bound_relaxes() -> None:
    lane = [Rung(c, 1000.0 * i + 7 * (i % 3), 0.5 + i * i * 1.3, 0) for i, c in enumerate((1, 4, 16, 64), 1)]
    rates = [p.rps for p in frontier(lane, DIRECT, [0.5, 1.0, 5.0, 10.0, 50.0, 1000.0])]
    assert rates == sorted(rates)


def test_frontier_sweep_stops_past_the_largest_bound_or_on_errors() -> None:
    assert not frontier_sweep_done(Rung(16, 5000.0, 51.9, 0), DIRECT, 50.0)  # +49.9
    assert frontier_sweep_done(Rung(16, 5000.0, 52.1, 0), DIRECT, 50.0)  # +50.1
    assert frontier_sweep_done(Rung(16, 5000.0, 3.0, 1), DIRECT, 50.0)
    assert frontier_sweep_done(Rung(8, 5000.0, 3.0, 0), DIRECT, 50.0)  # no direct rung to compare with


def test_saturated_sweep_and_sustained_rps() -> None:
    rungs = [Rung(8, 390.0, 21.0, 0), Rung(16, 780.0, 21.0, 0)]
    assert not saturated_sweep_done(rungs)
    assert saturated_sweep_done([*rungs, Rung(32, 800.0, 40.0, 0)])  # +2.6 %: saturated
    assert not saturated_sweep_done([*rungs, Rung(32, 1500.0, 21.0, 0)])
    assert saturated_sweep_done([*rungs, Rung(32, 1500.0, 21.0, 2)])
    assert sustained_rps([*rungs, Rung(32, 1500.0, 21.0, 2)]) == 780.0
    assert sustained_rps([]) == 0.0


def _stream(word_times: list[tuple[int, float]]) -> list[tuple[float, bytes]]:
    """Reads of a Chat stream: each read holds the frame of one word, at the given time."""
    return [(t, b'data: {"choices":[{"delta":{"content":"w%d "}}]}\n\n' % word) for word, t in word_times]


def test_frame_times_per_word_across_split_and_merged_reads() -> None:
    reads = _stream([(0, 0.020), (1, 0.040)])
    whole = b"".join(chunk for _, chunk in reads) + b'event: response.completed\ndata: {"text":"w0 w1 w2 "}\n\n'
    cut = whole.index(b'"w1') + 2  # the marker of frame 1 split across two reads
    split = [
        (0.020, whole[:cut]),
        (0.041, whole[cut : whole.index(b"event:")]),
        (0.060, whole[whole.index(b"event:") :]),
    ]
    times = frame_times(split)
    # Frame 0 in the first read, frame 1 ends in the second; the closing event repeats only word 0, already seen.
    assert times == [0.020, 0.041]
    merged = frame_times([(0.5, b'"w0 x"w2 ')])
    assert merged[0] == 0.5 and math.isnan(merged[1]) and merged[2] == 0.5
    assert frame_times([]) == []


def test_a_stream_is_sustained_only_with_every_frame_and_no_long_gap() -> None:
    pace = 0.020
    steady = [0.020 * (k + 1) for k in range(16)]
    assert stream_sustained(steady, 16, pace, 2.0)
    late = list(steady)
    late[8:] = [t + 0.021 for t in late[8:]]  # one gap of 41 ms > 2 x 20 ms
    assert not stream_sustained(late, 16, pace, 2.0)
    assert stream_sustained(late, 16, pace, 2.5)
    assert not stream_sustained(steady[:15], 16, pace, 2.0)  # a frame missing at the end
    holed = list(steady)
    holed[3] = math.nan
    assert not stream_sustained(holed, 16, pace, 2.0)
    swapped = list(steady)
    swapped[4], swapped[5] = swapped[5], swapped[4]
    assert not stream_sustained(swapped, 16, pace, 2.0)  # out of order
    burst = [0.320] * 16  # buffered, then sent at once: no gap is long, every frame is there
    assert stream_sustained(burst, 16, pace, 2.0)


def test_a_rung_holds_with_no_failures_and_enough_sustained_streams() -> None:
    assert stream_rung_passes(99, 100, 0, 0.99)
    assert not stream_rung_passes(98, 100, 0, 0.99)
    assert not stream_rung_passes(100, 100, 1, 0.99)
    assert not stream_rung_passes(0, 0, 0, 0.99)
    assert not stream_rung_passes(99, 100, 0, 1.0)


def _sweep(limit: int, ladder: list[int], refine: int) -> tuple[list[int], dict[int, bool]]:
    """Drive the stream sweep against a server that holds exactly `limit` concurrent streams."""
    results: dict[int, bool] = {}
    tried: list[int] = []
    while (c := next_stream_rung(results, ladder, refine)) is not None:
        tried.append(c)
        results[c] = c <= limit
        assert len(tried) < 50
    return tried, results


def test_stream_sweep_climbs_the_ladder_then_bisects() -> None:
    ladder = [8, 16, 32, 64, 128, 256]
    tried, results = _sweep(100, ladder, refine=2)
    assert tried == [8, 16, 32, 64, 128, 91, 108]  # sqrt(64*128) = 91 holds, sqrt(91*128) = 108 fails
    ceiling = stream_ceiling(results)
    assert (ceiling.streams, ceiling.floor) == (91, False)
    tried, results = _sweep(100, ladder, refine=0)
    assert tried == [8, 16, 32, 64, 128] and stream_ceiling(results).streams == 64


def test_stream_ceiling_edges() -> None:
    tried, results = _sweep(10_000, [8, 32, 128], refine=2)
    assert tried == [8, 32, 128]
    assert stream_ceiling(results) == stream_ceiling({8: True, 32: True, 128: True})
    assert stream_ceiling(results).floor and stream_ceiling(results).streams == 128
    tried, results = _sweep(4, [8, 32, 128], refine=2)
    assert tried == [8] and stream_ceiling(results).streams == 0 and not stream_ceiling(results).floor
    # A pass above the lowest failure (a noisy rung) does not count: the ceiling is below the first failure.
    assert stream_ceiling({8: True, 16: False, 32: True}).streams == 8
