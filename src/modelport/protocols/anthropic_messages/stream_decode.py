"""Messages SSE from an upstream → canonical stream events.

Wire facts this follows (see the recorded streams): ``message_start`` carries the id, model and input
usage; blocks are opened by ``content_block_start`` with a wire ``index`` and closed by
``content_block_stop`` (a stream cut by ``max_tokens`` may never close its last block); ``tool_use``
blocks start with ``input: {}`` and send ``input_json_delta`` fragments; ``message_delta.usage`` is
cumulative, so each value replaces the last. Blocks Messages has that the canonical model has not (server
tool calls and results, ``compaction``, ``fallback``...) and their deltas are skipped; so are unknown
event and delta types. Nothing here raises on odd input: the answer is already being paid for.
"""

from __future__ import annotations

import json
from typing import Any

from modelport.core.events import (
    Finish,
    PartEnd,
    ReasoningDelta,
    ResponseStart,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    UsageUpdate,
)
from modelport.protocols.anthropic_messages.content import arguments_from_input
from modelport.protocols.anthropic_messages.stop import stop_reason_from_wire
from modelport.protocols.anthropic_messages.usage import merge_wire_usage, usage_from_wire

_MAPPED_BLOCKS = ("text", "thinking", "redacted_thinking", "tool_use")


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


class MessagesStreamDecoder:
    def __init__(self) -> None:
        self._parts: dict[int, int] = {}  # wire block index → canonical part index
        self._start_input: dict[int, Any] = {}  # tool_use input given whole in its start block
        self._usage: dict[str, Any] = {}

    def feed(self, event: str | None, data: str) -> list[StreamEvent]:
        try:
            payload = json.loads(data)
        except ValueError:
            return []
        if not isinstance(payload, dict):
            return []
        kind = payload.get("type", event)
        if kind == "content_block_delta":
            return self._delta(payload)
        if kind == "content_block_start":
            return self._start(payload)
        if kind == "content_block_stop":
            return self._stop(payload)
        if kind == "message_start":
            return self._message_start(payload)
        if kind == "message_delta":
            return self._message_delta(payload)
        if kind == "error":
            error = payload.get("error")
            error = error if isinstance(error, dict) else {}
            return [
                StreamError(
                    _str(error.get("message")) or "upstream stream error", _str(error.get("type")) or "api_error"
                )
            ]
        return []  # ping, message_stop, unknown events

    def close(self) -> list[StreamEvent]:
        # A tool_use block whose whole input came in its start block but whose stop never came.
        events: list[StreamEvent] = [
            ToolCallDelta(self._parts[wire], arguments_from_input(value)) for wire, value in self._start_input.items()
        ]
        self._start_input.clear()
        return events

    def _usage_update(self, raw: Any) -> list[StreamEvent]:
        if not isinstance(raw, dict):
            return []
        self._usage = merge_wire_usage(self._usage, raw)
        usage = usage_from_wire(self._usage)
        return [UsageUpdate(usage)] if usage is not None else []

    def _message_start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        message = payload.get("message")
        message = message if isinstance(message, dict) else {}
        events: list[StreamEvent] = [ResponseStart(_str(message.get("id")), _str(message.get("model")))]
        return events + self._usage_update(message.get("usage"))

    def _message_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        delta = payload.get("delta")
        delta = delta if isinstance(delta, dict) else {}
        reason = stop_reason_from_wire(delta.get("stop_reason"))
        if reason is not None:
            sequence = delta.get("stop_sequence")
            events.append(Finish(reason, sequence if isinstance(sequence, str) else None))
        return events + self._usage_update(payload.get("usage"))

    def _start(self, payload: dict[str, Any]) -> list[StreamEvent]:
        wire = payload.get("index")
        block = payload.get("content_block")
        if not isinstance(wire, int) or not isinstance(block, dict) or block.get("type") not in _MAPPED_BLOCKS:
            return []
        kind = block["type"]
        index = self._parts[wire] = len(self._parts)
        if kind == "text":
            return [TextDelta(index, _str(block.get("text")))]  # opens the part even if it stays empty
        if kind == "thinking":
            return [
                ReasoningDelta(index=index, text=_str(block.get("thinking")), signature=block.get("signature") or None)
            ]
        if kind == "redacted_thinking":
            return [ReasoningDelta(index=index, redacted=_str(block.get("data")))]
        if isinstance(block.get("input"), dict) and block["input"]:
            self._start_input[wire] = block["input"]
        return [ToolCallStart(index, _str(block.get("id")), _str(block.get("name")))]

    def _delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        wire = payload.get("index")
        delta = payload.get("delta")
        if not isinstance(wire, int) or wire not in self._parts or not isinstance(delta, dict):
            return []
        index = self._parts[wire]
        kind = delta.get("type")
        if kind == "text_delta":
            return [TextDelta(index, _str(delta.get("text")))]
        if kind == "input_json_delta":
            fragment = _str(delta.get("partial_json"))
            if not fragment:
                return []
            self._start_input.pop(wire, None)  # the fragments are the input, not the start block's copy
            return [ToolCallDelta(index, fragment)]
        if kind == "thinking_delta":
            text = _str(delta.get("thinking"))
            return [ReasoningDelta(index=index, text=text)] if text else []
        if kind == "signature_delta":
            return [ReasoningDelta(index=index, signature=_str(delta.get("signature")))]
        return []  # citations_delta and newer delta types have no canonical form

    def _stop(self, payload: dict[str, Any]) -> list[StreamEvent]:
        wire = payload.get("index")
        if not isinstance(wire, int) or wire not in self._parts:
            return []
        index = self._parts[wire]
        events: list[StreamEvent] = []
        if wire in self._start_input:
            events.append(ToolCallDelta(index, arguments_from_input(self._start_input.pop(wire))))
        events.append(PartEnd(index))
        return events
