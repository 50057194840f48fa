"""Responses SSE (from an upstream) → canonical stream events.

Each ``output_text`` / ``refusal`` content part, ``function_call`` item and ``reasoning`` item becomes one
canonical part. Reasoning summaries are joined with blank lines; the item's latest ``encrypted_content``
(it changes between ``added`` and ``done``) is passed on. Hosted-tool items (``web_search_call``, ...)
have no canonical event and are skipped. ``sequence_number`` is not needed (recordings from before
mid-2025 lack it). Usage and the stop reason come from the terminal event (``response.completed``,
``response.incomplete``, ``response.failed``); an ``error`` event becomes a `StreamError`.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

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
from modelport.core.response import StopReason
from modelport.protocols.openai_common import logprob_entries
from modelport.protocols.openai_responses.input_decode import summary_texts
from modelport.protocols.openai_responses.status import stop_reason_from_wire
from modelport.protocols.openai_responses.usage import usage_from_wire

# Error codes that mean "slow down" rather than "failed".
_RATE_LIMIT_CODES = frozenset({"rate_limit_exceeded"})


@dataclass(slots=True)
class _Part:
    index: int
    kind: str
    streamed: bool = False  # some text / arguments already went out
    summaries: set[int] = field(default_factory=set)


def _int(value: Any, default: int = 0) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _obj(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _opt_str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class ResponsesStreamDecoder:
    def __init__(self) -> None:
        self._started = False
        self._next_index = 0
        self._items: dict[int, _Part] = {}  # output_index → function_call / reasoning part
        self._content: dict[tuple[int, int], _Part] = {}  # (output_index, content_index) → text part
        self._open: dict[int, _Part] = {}  # canonical index → part not yet ended
        self._calls = False
        self._text = False
        self._refused = False
        self._finished = False

    def _new(self, kind: str) -> _Part:
        part = _Part(self._next_index, kind)
        self._next_index += 1
        self._open[part.index] = part
        return part

    def _end(self, part: _Part | None) -> list[StreamEvent]:
        if part is None or self._open.pop(part.index, None) is None:
            return []
        return [PartEnd(part.index)]

    def feed(self, event: str | None, data: str) -> list[StreamEvent]:
        try:
            payload = json.loads(data)
        except ValueError:
            return []
        if not isinstance(payload, dict):
            return []
        kind = payload.get("type") if isinstance(payload.get("type"), str) else event
        events: list[StreamEvent] = []
        if kind == "error":
            return [self._error(payload)]
        if not self._started:
            self._started = True
            response = _obj(payload.get("response"))
            created = response.get("created_at")
            events.append(
                ResponseStart(
                    _str(response.get("id")),
                    _str(response.get("model")),
                    int(created) if isinstance(created, int | float) else None,
                )
            )
        handler = _HANDLERS.get(kind or "")
        if handler is not None:
            handler(self, payload, events)
        return events

    def close(self) -> list[StreamEvent]:
        events: list[StreamEvent] = [PartEnd(i) for i in sorted(self._open)]
        self._open.clear()
        return events

    # --- output items -------------------------------------------------------------------------------

    def _item_added(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        item = _obj(payload.get("item"))
        self._open_item(_int(payload.get("output_index"), len(self._items)), item, events)

    def _open_item(self, oi: int, item: dict[str, Any], events: list[StreamEvent]) -> _Part | None:
        if oi in self._items:
            return self._items[oi]
        kind = item.get("type")
        if kind == "function_call":
            part = self._items[oi] = self._new("tool_call")
            self._calls = True
            events.append(ToolCallStart(part.index, _str(item.get("call_id")), _str(item.get("name"))))
            if _str(item.get("arguments")):
                part.streamed = True
                events.append(ToolCallDelta(part.index, item["arguments"]))
            return part
        if kind == "reasoning":
            part = self._items[oi] = self._new("reasoning")
            events.append(
                ReasoningDelta(
                    index=part.index,
                    id=_opt_str(item.get("id")),
                    encrypted_content=_opt_str(item.get("encrypted_content")),
                )
            )
            return part
        return None  # messages open per content part; hosted-tool items are not canonical

    def _item_done(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        oi = _int(payload.get("output_index"), -1)
        item = _obj(payload.get("item"))
        kind = item.get("type")
        if kind == "message":
            for ci, content in enumerate(item.get("content") or []):
                if isinstance(content, dict):
                    part = self._content_part(oi, ci, content, events)
                    if part is not None:
                        self._catch_up(part, _str(content.get("text") or content.get("refusal")), events)
                        events.extend(self._end(part))
            return
        part = self._open_item(oi, item, events)
        if part is None:
            return
        if kind == "function_call":
            self._catch_up(part, _str(item.get("arguments")), events)
        elif kind == "reasoning":
            text = "\n\n".join(summary_texts(item.get("summary")))
            events.append(
                ReasoningDelta(
                    index=part.index,
                    text="" if part.summaries else text,
                    id=_opt_str(item.get("id")),
                    encrypted_content=_opt_str(item.get("encrypted_content")),
                )
            )
        events.extend(self._end(part))

    # --- message content ----------------------------------------------------------------------------

    def _content_part(self, oi: int, ci: int, content: dict[str, Any], events: list[StreamEvent]) -> _Part | None:
        """The canonical part of content part (oi, ci), opened (with an empty delta) on first sight."""
        key = (oi, ci)
        if key in self._content:
            return self._content[key]
        kind = content.get("type")
        if kind == "refusal":
            part = self._content[key] = self._new("refusal")
            self._refused = True
            events.append(RefusalDelta(part.index, ""))
            return part
        if kind == "output_text":
            part = self._content[key] = self._new("text")
            self._text = True
            events.append(TextDelta(part.index, ""))
            return part
        return None

    def _part_added(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        part = _obj(payload.get("part"))
        oi, ci = _int(payload.get("output_index")), _int(payload.get("content_index"))
        opened = self._content_part(oi, ci, part, events)
        if opened is not None:
            self._catch_up(opened, _str(part.get("text") or part.get("refusal")), events)

    def _part_done(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        part = _obj(payload.get("part"))
        oi, ci = _int(payload.get("output_index")), _int(payload.get("content_index"))
        opened = self._content_part(oi, ci, part, events)
        if opened is not None:
            self._catch_up(opened, _str(part.get("text") or part.get("refusal")), events)
            events.extend(self._end(opened))

    def _text_delta(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        kind = "refusal" if payload.get("type") == "response.refusal.delta" else "output_text"
        oi, ci = _int(payload.get("output_index")), _int(payload.get("content_index"))
        part = self._content_part(oi, ci, {"type": kind}, events)
        delta = _str(payload.get("delta"))
        if part is not None and delta:
            part.streamed = True
            events.append(
                RefusalDelta(part.index, delta)
                if part.kind == "refusal"
                else TextDelta(part.index, delta, logprob_entries(payload.get("logprobs")))
            )

    def _text_done(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        kind = "refusal" if payload.get("type") == "response.refusal.done" else "output_text"
        oi, ci = _int(payload.get("output_index")), _int(payload.get("content_index"))
        part = self._content_part(oi, ci, {"type": kind}, events)
        if part is not None:
            self._catch_up(part, _str(payload.get("text") or payload.get("refusal")), events)

    def _catch_up(self, part: _Part, full: str, events: list[StreamEvent]) -> None:
        """A ``done`` event carries the full value; send it if no delta did (servers may skip deltas)."""
        if part.streamed or not full:
            return
        part.streamed = True
        if part.kind == "text":
            events.append(TextDelta(part.index, full))
        elif part.kind == "refusal":
            events.append(RefusalDelta(part.index, full))
        elif part.kind == "tool_call":
            events.append(ToolCallDelta(part.index, full))

    # --- function calls and reasoning ---------------------------------------------------------------

    def _arguments_delta(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        part = self._items.get(_int(payload.get("output_index"), -1))
        delta = _str(payload.get("delta"))
        if part is not None and part.kind == "tool_call" and delta:
            part.streamed = True
            events.append(ToolCallDelta(part.index, delta))

    def _arguments_done(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        part = self._items.get(_int(payload.get("output_index"), -1))
        if part is not None and part.kind == "tool_call":
            self._catch_up(part, _str(payload.get("arguments")), events)

    def _reasoning_part(self, payload: dict[str, Any]) -> _Part | None:
        part = self._items.get(_int(payload.get("output_index"), -1))
        return part if part is not None and part.kind == "reasoning" else None

    def _summary_added(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        part = self._reasoning_part(payload)
        if part is None:
            return
        si = _int(payload.get("summary_index"))
        if part.summaries and si not in part.summaries:
            events.append(ReasoningDelta(index=part.index, text="\n\n"))  # separates summary paragraphs
        part.summaries.add(si)

    def _reasoning_delta(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        part = self._reasoning_part(payload)
        delta = _str(payload.get("delta"))
        if part is not None and delta:
            if payload.get("type") == "response.reasoning_summary_text.delta":
                self._summary_added(payload, events)
            part.summaries.add(_int(payload.get("summary_index")))
            events.append(ReasoningDelta(index=part.index, text=delta))

    # --- the end ------------------------------------------------------------------------------------

    def _terminal(self, payload: dict[str, Any], events: list[StreamEvent]) -> None:
        if self._finished:
            return
        self._finished = True
        response = _obj(payload.get("response"))
        output = _list(response.get("output"))
        self._final_reasoning(output, events)
        events.extend(self.close())
        usage = usage_from_wire(response.get("usage"), response.get("service_tier"))
        if usage is not None:
            events.append(UsageUpdate(usage))
        status = response.get("status") or _str(payload.get("type")).removeprefix("response.")
        calls = self._calls or any(isinstance(i, dict) and i.get("type") == "function_call" for i in output)
        reason = stop_reason_from_wire(
            status,
            response.get("incomplete_details"),
            has_tool_calls=calls,
            refused=self._refused and not self._text,
        )
        if reason is StopReason.ERROR:
            error = _obj(response.get("error"))
            events.append(self._error(error))
        else:
            events.append(Finish(reason or StopReason.END_TURN))

    def _final_reasoning(self, output: list[Any], events: list[StreamEvent]) -> None:
        """The final response re-encrypts reasoning (its ``encrypted_content`` differs from the one in
        ``output_item.done``); the final one wins, as in a non-stream response."""
        for oi, item in enumerate(output):
            part = self._items.get(oi)
            if not isinstance(item, dict) or part is None or part.kind != "reasoning":
                continue
            encrypted = _opt_str(item.get("encrypted_content"))
            if encrypted is not None:
                events.append(ReasoningDelta(index=part.index, encrypted_content=encrypted))

    def _error(self, payload: dict[str, Any]) -> StreamError:
        code = payload.get("code")
        message = _str(payload.get("message")) or "The upstream failed while streaming the response."
        return StreamError(message, "rate_limit_exceeded" if code in _RATE_LIMIT_CODES else "api_error")


_Handler = Callable[[ResponsesStreamDecoder, dict[str, Any], list[StreamEvent]], None]

_HANDLERS: dict[str, _Handler] = {
    "response.output_item.added": ResponsesStreamDecoder._item_added,
    "response.output_item.done": ResponsesStreamDecoder._item_done,
    "response.content_part.added": ResponsesStreamDecoder._part_added,
    "response.content_part.done": ResponsesStreamDecoder._part_done,
    "response.output_text.delta": ResponsesStreamDecoder._text_delta,
    "response.refusal.delta": ResponsesStreamDecoder._text_delta,
    "response.output_text.done": ResponsesStreamDecoder._text_done,
    "response.refusal.done": ResponsesStreamDecoder._text_done,
    "response.function_call_arguments.delta": ResponsesStreamDecoder._arguments_delta,
    "response.function_call_arguments.done": ResponsesStreamDecoder._arguments_done,
    "response.reasoning_summary_part.added": ResponsesStreamDecoder._summary_added,
    "response.reasoning_summary_text.delta": ResponsesStreamDecoder._reasoning_delta,
    "response.reasoning_text.delta": ResponsesStreamDecoder._reasoning_delta,
    "response.completed": ResponsesStreamDecoder._terminal,
    "response.incomplete": ResponsesStreamDecoder._terminal,
    "response.failed": ResponsesStreamDecoder._terminal,
}
