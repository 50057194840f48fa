"""Canonical stream events → Messages SSE, framed like the real API.

Wire order: ``message_start`` (with input usage), then per block ``content_block_start`` → deltas
(``text_delta``, ``thinking_delta``, ``signature_delta``, ``input_json_delta``) → ``content_block_stop``,
one ``ping`` after the first block start, then ``message_delta`` (stop reason, cumulative usage) and
``message_stop``. Every frame is ``event: <type>`` + ``data: <json>``.

Messages blocks are strictly sequential, but canonical parts may interleave (parallel tool calls from a
Chat upstream). So one block is open on the wire at a time; a part that starts while a tool call is open
is buffered and sent once that call ends. A text or thinking part is closed as soon as another part
starts, since no protocol resumes a text part after that.

`message_start` is held back until the first block (or the end) so that input usage reported right after
the upstream's start (Anthropic ``message_start``) is in it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

import orjson

from modelport.core.events import (
    Finish,
    PartEnd,
    ReasoningDelta,
    RefusalDelta,
    StreamError,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    UsageUpdate,
)
from modelport.core.response import StopReason
from modelport.core.sse import sse_frame
from modelport.core.usage import Usage
from modelport.protocols.anthropic_messages.error_types import stream_error_type
from modelport.protocols.anthropic_messages.response import message_id
from modelport.protocols.anthropic_messages.stop import stop_reason_to_wire
from modelport.protocols.anthropic_messages.usage import usage_to_wire
from modelport.protocols.reasoning_carry import wrap_openai

PING = sse_frame("ping", '{"type": "ping"}')


def frame(payload: dict[str, Any]) -> bytes:
    return sse_frame(str(payload["type"]), orjson.dumps(payload))


@dataclass(slots=True)
class _Block:
    start: dict[str, Any]
    state: Literal["pending", "open", "done"] = "pending"
    ended: bool = False  # PartEnd seen while still pending
    wire: int = -1
    deltas: list[dict[str, Any]] = field(default_factory=list)
    signed: bool = False  # a signature_delta went out (or is queued)
    carry_id: str | None = None  # OpenAI reasoning to carry in the signature (protocols.reasoning_carry)
    carry_enc: str | None = None

    @property
    def sequential(self) -> bool:
        """Text and thinking never resume once another part starts; tool calls may (parallel calls)."""
        return bool(self.start["type"] != "tool_use")


class MessagesStreamEncoder:
    def __init__(self, model: str, response_id: str) -> None:
        self._model = model
        self._id = message_id(response_id)
        self._started = False
        self._pinged = False
        self._closed = False
        self._usage: Usage | None = None
        self._stop: StopReason | None = None
        self._stop_sequence: str | None = None
        self._blocks: dict[int, _Block] = {}  # canonical part index → block
        self._open: int | None = None
        self._next_wire = 0

    def encode(self, event: StreamEvent) -> bytes:
        if self._closed:
            return b""
        match event:
            case TextDelta(index=i, text=text) | RefusalDelta(index=i, text=text):
                delta = [{"type": "text_delta", "text": text}] if text else []
                return self._part(i, {"type": "text", "text": ""}, delta)
            case ReasoningDelta():
                return self._reasoning(event)
            case ToolCallStart(index=i, id=call_id, name=name):
                return self._part(i, {"type": "tool_use", "id": call_id, "name": name, "input": {}}, [])
            case ToolCallDelta(index=i, arguments=fragment):
                if i not in self._blocks or not fragment:
                    return b""
                return self._part(i, self._blocks[i].start, [{"type": "input_json_delta", "partial_json": fragment}])
            case PartEnd(index=i):
                return self._end(i)
            case Finish(stop_reason=reason, stop_sequence=sequence):
                self._stop, self._stop_sequence = reason, sequence
                return b""
            case UsageUpdate(usage=usage):
                self._usage = usage
                return b""
            case StreamError(message=message, type=kind):
                return self.error(message, kind)
            case _:
                return b""  # ResponseStart: our own id and the client's model name are used

    def close(self) -> bytes:
        if self._closed:
            return b""
        self._closed = True
        out = self._message_start() + self._stop_open()
        for index in sorted(i for i, b in self._blocks.items() if b.state == "pending"):
            out += self._open_block(index) + self._stop_open()
        reason = self._stop or StopReason.END_TURN
        usage = usage_to_wire(self._usage)
        out += frame(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": stop_reason_to_wire(reason),
                    "stop_sequence": self._stop_sequence if reason == StopReason.STOP_SEQUENCE else None,
                },
                "usage": usage,
            }
        )
        return out + frame({"type": "message_stop"})

    def error(self, message: str, type: str = "api_error") -> bytes:
        """Anthropic's in-stream error event (with one of Anthropic's own error types, which clients key their
        retries on); the caller ends the stream after it."""
        self._closed = True
        return frame({"type": "error", "error": {"type": stream_error_type(type), "message": message}})

    def _message_start(self) -> bytes:
        if self._started:
            return b""
        self._started = True
        message: dict[str, Any] = {
            "id": self._id,
            "type": "message",
            "role": "assistant",
            "model": self._model,
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage_to_wire(self._usage),
        }
        return frame({"type": "message_start", "message": message})

    def _reasoning(self, event: ReasoningDelta) -> bytes:
        if event.redacted is not None:
            return self._part(event.index, {"type": "redacted_thinking", "data": event.redacted}, [])
        block = self._blocks.get(event.index)
        if block is not None and block.state == "done" and not event.text:
            return b""  # late metadata (e.g. re-encrypted reasoning in the final response): no empty block
        deltas: list[dict[str, Any]] = []
        if event.text:
            deltas.append({"type": "thinking_delta", "thinking": event.text})
        if event.signature:
            deltas.append({"type": "signature_delta", "signature": event.signature})
        carries = event.id is not None or event.encrypted_content is not None
        if not deltas and not carries and block is None:
            return b""
        out = self._part(event.index, {"type": "thinking", "thinking": "", "signature": ""}, deltas)
        block = self._blocks[event.index]
        block.signed = block.signed or bool(event.signature)
        if event.id is not None:
            block.carry_id = event.id
        if event.encrypted_content is not None:
            block.carry_enc = event.encrypted_content
        return out

    def _part(self, index: int, start: dict[str, Any], deltas: list[dict[str, Any]]) -> bytes:
        out = b""
        block = self._blocks.get(index)
        if block is not None and block.state == "done":
            if not block.sequential:
                return b""  # a late fragment of a closed tool call cannot be sent any more
            block = None  # late text: it goes on in a new block
        if block is None:
            block = self._blocks[index] = _Block(start)
            current = self._blocks[self._open] if self._open is not None else None
            if current is not None and current.sequential:
                out += self._stop_open()
            if self._open is None:
                out += self._open_block(index)
        for delta in deltas:
            if block.state == "open":
                out += frame({"type": "content_block_delta", "index": block.wire, "delta": delta})
            else:
                block.deltas.append(delta)
        return out

    def _open_block(self, index: int) -> bytes:
        block = self._blocks[index]
        block.state, block.wire = "open", self._next_wire
        self._next_wire += 1
        self._open = index
        out = self._message_start()
        out += frame({"type": "content_block_start", "index": block.wire, "content_block": block.start})
        if not self._pinged:
            self._pinged = True
            out += PING
        for delta in block.deltas:
            out += frame({"type": "content_block_delta", "index": block.wire, "delta": delta})
        block.deltas.clear()
        return out

    def _stop_open(self) -> bytes:
        if self._open is None:
            return b""
        block = self._blocks[self._open]
        block.state = "done"
        self._open = None
        out = b""
        if block.start["type"] == "thinking" and not block.signed:
            # OpenAI reasoning travels in the signature so the client can send it back next turn.
            signature = wrap_openai(block.carry_id, block.carry_enc)
            if signature is not None:
                delta = {"type": "signature_delta", "signature": signature}
                out += frame({"type": "content_block_delta", "index": block.wire, "delta": delta})
        return out + frame({"type": "content_block_stop", "index": block.wire})

    def _end(self, index: int) -> bytes:
        block = self._blocks.get(index)
        if block is None or block.state == "done":
            return b""
        if block.state == "pending":
            block.ended = True
            return b""
        out = self._stop_open()
        # Send the parts that waited behind this one, in part order, until one is still in progress.
        for waiting in sorted(i for i, b in self._blocks.items() if b.state == "pending"):
            out += self._open_block(waiting)
            if not self._blocks[waiting].ended:
                break
            out += self._stop_open()
        return out
