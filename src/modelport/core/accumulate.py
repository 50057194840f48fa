"""Fold a canonical stream into a response, and unfold a response into a stream.

`StreamAccumulator` is used for billing/logging of streamed answers and to answer a non-stream client
from a streaming upstream; `events_from_response` drives a stream encoder from a non-stream upstream.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from modelport.core.events import (
    Finish,
    PartEnd,
    ReasoningDelta,
    RefusalDelta,
    ResponseStart,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    UsageUpdate,
)
from modelport.core.parts import OutputPart, ReasoningPart, RefusalPart, TextPart, ToolCallPart
from modelport.core.response import CanonicalResponse, StopReason
from modelport.core.usage import Usage


@dataclass(slots=True)
class _Builder:
    kind: str
    chunks: list[str] = field(default_factory=list)
    id: str = ""
    name: str = ""
    signature: str | None = None
    redacted: str | None = None
    encrypted_content: str | None = None

    def build(self) -> OutputPart:
        text = "".join(self.chunks)
        if self.kind == "tool_call":
            return ToolCallPart(id=self.id, name=self.name, arguments=text)
        if self.kind == "reasoning":
            return ReasoningPart(
                text=text,
                signature=self.signature,
                redacted=self.redacted,
                id=self.id or None,
                encrypted_content=self.encrypted_content,
            )
        if self.kind == "refusal":
            return RefusalPart(text=text)
        return TextPart(text=text)


class StreamAccumulator:
    """Feed every canonical event; `response()` gives the answer so far (callable at any time)."""

    def __init__(self) -> None:
        self.id = ""
        self.model = ""
        self.created: int | None = None
        self.stop_reason: StopReason | None = None
        self.stop_sequence: str | None = None
        self.usage: Usage | None = None
        self.error: StreamError | None = None
        self._parts: dict[int, _Builder] = {}

    def _part(self, index: int, kind: str) -> _Builder:
        builder = self._parts.get(index)
        if builder is None:
            builder = self._parts[index] = _Builder(kind)
        return builder

    def feed(self, event: StreamEvent) -> None:
        match event:
            case ResponseStart(id=rid, model=model, created=created):
                self.id, self.model, self.created = rid, model, created
            case TextDelta(index=i, text=text):
                self._part(i, "text").chunks.append(text)
            case RefusalDelta(index=i, text=text):
                self._part(i, "refusal").chunks.append(text)
            case ReasoningDelta():
                b = self._part(event.index, "reasoning")
                b.chunks.append(event.text)
                b.signature = event.signature if event.signature is not None else b.signature
                b.redacted = event.redacted if event.redacted is not None else b.redacted
                b.id = event.id if event.id is not None else b.id
                if event.encrypted_content is not None:
                    b.encrypted_content = event.encrypted_content
            case ToolCallStart(index=i, id=call_id, name=name):
                b = self._part(i, "tool_call")
                b.id, b.name = call_id, name
            case ToolCallDelta(index=i, arguments=fragment):
                self._part(i, "tool_call").chunks.append(fragment)
            case Finish(stop_reason=reason, stop_sequence=seq):
                self.stop_reason, self.stop_sequence = reason, seq
            case UsageUpdate(usage=usage):
                self.usage = usage
            case StreamError():
                self.error = event
                self.stop_reason = StopReason.ERROR
            case PartEnd():
                pass

    def feed_all(self, events: list[StreamEvent]) -> None:
        for event in events:
            self.feed(event)

    def response(self) -> CanonicalResponse:
        return CanonicalResponse(
            id=self.id,
            model=self.model,
            created=self.created if self.created is not None else int(time.time()),
            content=[self._parts[i].build() for i in sorted(self._parts)],
            stop_reason=self.stop_reason,
            stop_sequence=self.stop_sequence,
            usage=self.usage,
        )


def events_from_response(resp: CanonicalResponse) -> list[StreamEvent]:
    """The stream a streaming upstream would have produced for `resp` (one delta per part)."""
    events: list[StreamEvent] = [ResponseStart(resp.id, resp.model, resp.created)]
    for i, part in enumerate(resp.content):
        match part:
            case TextPart(text=text):
                events.append(TextDelta(i, text))
            case RefusalPart(text=text):
                events.append(RefusalDelta(i, text))
            case ReasoningPart():
                events.append(
                    ReasoningDelta(
                        index=i,
                        text=part.text,
                        signature=part.signature,
                        redacted=part.redacted,
                        id=part.id,
                        encrypted_content=part.encrypted_content,
                    )
                )
            case ToolCallPart(id=call_id, name=name, arguments=arguments):
                events.append(ToolCallStart(i, call_id, name))
                if arguments:
                    events.append(ToolCallDelta(i, arguments))
        events.append(PartEnd(i))
    events.append(Finish(resp.stop_reason or StopReason.END_TURN, resp.stop_sequence))
    if resp.usage is not None:
        events.append(UsageUpdate(resp.usage))
    return events
