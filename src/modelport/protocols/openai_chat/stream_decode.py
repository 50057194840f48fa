"""Chat completion chunks (upstream SSE) → canonical stream events.

Only choice 0 is followed (``n`` > 1 streams are relayed by the fast path, not re-encoded). Text,
refusal and reasoning each get one canonical part, opened by their first non-empty delta; every tool call
(`tool_calls[].index`) gets its own part. Usage comes from any chunk with a non-null ``usage``
(OpenAI sends it in a final ``choices: []`` chunk when ``include_usage`` is set).
"""

from __future__ import annotations

import json
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
from modelport.protocols.openai_chat.finish import stop_reason_from_wire
from modelport.protocols.openai_chat.usage import usage_from_wire
from modelport.protocols.openai_common import logprob_entries


class ChatStreamDecoder:
    def __init__(self) -> None:
        self._started = False
        self._next_index = 0
        self._text: int | None = None
        self._refusal: int | None = None
        self._reasoning: int | None = None
        self._tools: dict[int, int] = {}  # Chat tool_calls[].index → canonical part index
        self._open: list[int] = []
        self._refused = False
        self._finished = False

    def _new_part(self) -> int:
        index = self._next_index
        self._next_index += 1
        self._open.append(index)
        return index

    def _close_open(self) -> list[StreamEvent]:
        events: list[StreamEvent] = [PartEnd(i) for i in self._open]
        self._open.clear()
        return events

    def feed(self, event: str | None, data: str) -> list[StreamEvent]:
        data = data.strip()
        if not data or data == "[DONE]":
            return []
        try:
            chunk = json.loads(data)
        except ValueError:
            return []
        if not isinstance(chunk, dict):
            return []
        if isinstance(chunk.get("error"), dict):
            return [_stream_error(chunk["error"])]

        events: list[StreamEvent] = []
        if not self._started:
            self._started = True
            created = chunk.get("created")
            events.append(
                ResponseStart(
                    str(chunk.get("id") or ""),
                    str(chunk.get("model") or ""),
                    created if isinstance(created, int) else None,
                )
            )
        for choice in chunk.get("choices") or []:
            if isinstance(choice, dict) and choice.get("index", 0) == 0:
                self._choice(choice, events)
        usage = usage_from_wire(chunk.get("usage"), chunk.get("service_tier"))
        if usage is not None:
            events.append(UsageUpdate(usage))
        return events

    def _choice(self, choice: dict[str, Any], events: list[StreamEvent]) -> None:
        delta = choice.get("delta")
        if isinstance(delta, dict):
            logprobs = choice.get("logprobs")
            self._delta(delta, events, logprob_entries(logprobs.get("content")) if isinstance(logprobs, dict) else None)
        reason = choice.get("finish_reason")
        if isinstance(reason, str) and not self._finished:
            self._finished = True
            events.extend(self._close_open())
            stop = stop_reason_from_wire(reason, refused=self._refused and self._text is None)
            if stop is not None:
                events.append(Finish(stop))

    def _delta(
        self, delta: dict[str, Any], events: list[StreamEvent], logprobs: list[dict[str, Any]] | None = None
    ) -> None:
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            if self._reasoning is None:
                self._reasoning = self._new_part()
            events.append(ReasoningDelta(index=self._reasoning, text=reasoning))
        content = delta.get("content")
        if isinstance(content, str) and content:
            if self._text is None:
                self._text = self._new_part()
            events.append(TextDelta(self._text, content, logprobs))
        refusal = delta.get("refusal")
        if isinstance(refusal, str) and refusal:
            self._refused = True
            if self._refusal is None:
                self._refusal = self._new_part()
            events.append(RefusalDelta(self._refusal, refusal))
        for call in delta.get("tool_calls") or []:
            if isinstance(call, dict):
                self._tool_call(call, events)

    def _tool_call(self, call: dict[str, Any], events: list[StreamEvent]) -> None:
        wire_index = call.get("index", 0)
        wire_index = wire_index if isinstance(wire_index, int) else 0
        fn: dict[str, Any] = call["function"] if isinstance(call.get("function"), dict) else {}
        index = self._tools.get(wire_index)
        if index is None:
            index = self._tools[wire_index] = self._new_part()
            events.append(ToolCallStart(index, str(call.get("id") or ""), str(fn.get("name") or "")))
        arguments = fn.get("arguments")
        if isinstance(arguments, str) and arguments:
            events.append(ToolCallDelta(index, arguments))

    def close(self) -> list[StreamEvent]:
        return self._close_open()


# OpenAI's in-stream error `type`/`code` values that mean "slow down" (the rest are server errors to us).
_RATE_LIMIT_TYPES = frozenset({"rate_limit_exceeded", "rate_limit_error", "requests", "tokens"})


def _stream_error(error: dict[str, Any]) -> StreamError:
    """An upstream's in-stream error as the gateway's own type (`rate_limit_exceeded` or `api_error`), as the
    Responses decoder does: each client protocol's encoder then names it in its own closed set of types."""
    message = str(error.get("message") or "upstream error")
    limited = error.get("type") in _RATE_LIMIT_TYPES or error.get("code") in _RATE_LIMIT_TYPES
    return StreamError(message, "rate_limit_exceeded" if limited else "api_error")
