"""StreamAccumulator folds canonical events into a response; events_from_response unfolds one."""

from __future__ import annotations

from modelport.core import (
    CanonicalResponse,
    Finish,
    PartEnd,
    ReasoningDelta,
    ReasoningPart,
    RefusalDelta,
    RefusalPart,
    ResponseStart,
    StopReason,
    StreamAccumulator,
    StreamError,
    TextDelta,
    TextPart,
    ToolCallDelta,
    ToolCallPart,
    ToolCallStart,
    Usage,
    UsageUpdate,
    events_from_response,
)


def test_interleaved_parts_fold_by_index() -> None:
    acc = StreamAccumulator()
    acc.feed_all(
        [
            ResponseStart("r1", "m", 100),
            ReasoningDelta(index=0, text="think "),
            ReasoningDelta(index=0, text="hard"),
            ReasoningDelta(index=0, signature="sig"),
            PartEnd(0),
            TextDelta(1, "Hel"),
            ToolCallStart(2, "c1", "f"),
            ToolCallStart(3, "c2", "g"),
            ToolCallDelta(3, '{"b"'),
            ToolCallDelta(2, '{"a":'),
            TextDelta(1, "lo"),
            ToolCallDelta(2, "1}"),
            ToolCallDelta(3, ":2}"),
            UsageUpdate(Usage(input_tokens=5)),
            Finish(StopReason.TOOL_USE),
            UsageUpdate(Usage(input_tokens=5, output_tokens=9)),  # cumulative: the latest wins
        ]
    )
    assert acc.response() == CanonicalResponse(
        id="r1",
        model="m",
        created=100,
        content=[
            ReasoningPart(text="think hard", signature="sig"),
            TextPart(text="Hello"),
            ToolCallPart(id="c1", name="f", arguments='{"a":1}'),
            ToolCallPart(id="c2", name="g", arguments='{"b":2}'),
        ],
        stop_reason=StopReason.TOOL_USE,
        usage=Usage(input_tokens=5, output_tokens=9),
    )


def test_stream_error_marks_the_response() -> None:
    acc = StreamAccumulator()
    acc.feed_all([ResponseStart("r", "m"), TextDelta(0, "par"), StreamError("overloaded", "overloaded_error")])
    resp = acc.response()
    assert resp.stop_reason is StopReason.ERROR and resp.text == "par"
    assert acc.error == StreamError("overloaded", "overloaded_error")
    assert resp.created > 0  # no created in the stream: now


def test_unfold_then_fold_is_identity() -> None:
    resp = CanonicalResponse(
        id="r",
        model="m",
        created=7,
        content=[
            ReasoningPart(text="", redacted="opaque"),
            TextPart(text="a"),
            RefusalPart(text="no"),
            ToolCallPart(id="c", name="f", arguments=""),
        ],
        stop_reason=StopReason.REFUSAL,
        stop_sequence=None,
        usage=Usage(input_tokens=1, output_tokens=2),
    )
    events = events_from_response(resp)
    assert isinstance(events[0], ResponseStart)
    assert events[-2:] == [Finish(StopReason.REFUSAL), UsageUpdate(Usage(input_tokens=1, output_tokens=2))]
    assert RefusalDelta(2, "no") in events
    acc = StreamAccumulator()
    acc.feed_all(events)
    assert acc.response() == resp
