"""Canonical stream events → Chat completion chunks, framed as SSE the way OpenAI sends them.

Observed wire order (see the recorded streams): a role chunk first (``delta: {role, content: "",
refusal: null}``; ``content: null`` and merged with the first tool call when the turn starts with a tool
call), then content / tool-call deltas (``id``, ``type`` and ``function.name`` only on a call's first
delta), a finish chunk with ``delta: {}``, with ``include_usage`` one ``choices: []`` chunk carrying
``usage`` (every earlier chunk has ``"usage": null``), then ``data: [DONE]``.
Reasoning is not sent: OpenAI's Chat API has no reasoning delta.
"""

from __future__ import annotations

import time
from typing import Any

import orjson

from modelport.core.events import (
    Finish,
    PartEnd,
    RefusalDelta,
    ResponseStart,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    ToolCallStart,
    UsageUpdate,
)
from modelport.core.response import StopReason
from modelport.core.sse import sse_frame
from modelport.core.usage import Usage
from modelport.protocols.openai_chat.finish import finish_reason_to_wire
from modelport.protocols.openai_chat.usage import usage_to_wire
from modelport.protocols.openai_common import chat_logprobs


def frame(payload: dict[str, Any]) -> bytes:
    return sse_frame(None, orjson.dumps(payload))


DONE = sse_frame(None, "[DONE]")


class ChatStreamEncoder:
    def __init__(self, model: str, response_id: str, include_usage: bool) -> None:
        self._model = model
        self._id = response_id
        self._include_usage = include_usage
        self._created = int(time.time())
        self._role_sent = False
        self._finished = False
        self._closed = False
        self._tools: dict[int, int] = {}  # canonical part index → Chat tool_calls[].index
        self._no_arguments: set[int] = set()  # calls whose arguments have not started yet
        self._usage: Usage | None = None

    def _chunk(
        self, delta: dict[str, Any], finish_reason: str | None = None, logprobs: dict[str, Any] | None = None
    ) -> bytes:
        payload: dict[str, Any] = {
            "id": self._id,
            "object": "chat.completion.chunk",
            "created": self._created,
            "model": self._model,
            "choices": [{"index": 0, "delta": delta, "logprobs": logprobs, "finish_reason": finish_reason}],
        }
        if self._include_usage:
            payload["usage"] = None
        return frame(payload)

    def _role(self, *, content: str | None = "", refusal: str | None = None) -> bytes:
        """The role chunk, once, before the first content."""
        if self._role_sent:
            return b""
        self._role_sent = True
        return self._chunk({"role": "assistant", "content": content, "refusal": refusal})

    def encode(self, event: StreamEvent) -> bytes:
        if self._finished and not isinstance(event, UsageUpdate):
            return b""
        match event:
            case ResponseStart(created=created):
                if created is not None:
                    self._created = created
                return b""
            case TextDelta(text=text, logprobs=logprobs):
                if not text:
                    return b""
                return self._role() + self._chunk({"content": text}, logprobs=chat_logprobs(logprobs))
            case RefusalDelta(text=text):
                if not text:
                    return b""
                return self._role(content=None, refusal="") + self._chunk({"refusal": text})
            case ToolCallStart(index=index, id=call_id, name=name):
                wire_index = self._tools[index] = len(self._tools)
                self._no_arguments.add(index)
                call = {
                    "index": wire_index,
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": ""},
                }
                if not self._role_sent:
                    self._role_sent = True
                    return self._chunk({"role": "assistant", "content": None, "tool_calls": [call], "refusal": None})
                return self._chunk({"tool_calls": [call]})
            case ToolCallDelta(index=index, arguments=fragment):
                if index not in self._tools or not fragment:
                    return b""
                self._no_arguments.discard(index)
                return self._chunk({"tool_calls": [{"index": self._tools[index], "function": {"arguments": fragment}}]})
            case PartEnd(index=index):
                return self._empty_arguments(index)
            case Finish(stop_reason=reason):
                return self._finish(reason)
            case UsageUpdate(usage=usage):
                self._usage = usage
                return b""
            case _:
                # Reasoning and part ends have no Chat form; stream errors go through `error()`.
                return b""

    def _empty_arguments(self, index: int) -> bytes:
        """A call that ended with no argument text (an Anthropic tool without input sends only ``""``) gets
        ``{}``: OpenAI clients parse the arguments as JSON, and ``""`` is not."""
        if index not in self._no_arguments:
            return b""
        self._no_arguments.discard(index)
        return self._chunk({"tool_calls": [{"index": self._tools[index], "function": {"arguments": "{}"}}]})

    def _finish(self, reason: StopReason | None) -> bytes:
        if self._finished:
            return b""
        self._finished = True
        out = b"".join(self._empty_arguments(i) for i in sorted(self._no_arguments))
        return out + self._role() + self._chunk({}, finish_reason_to_wire(reason))

    def close(self) -> bytes:
        if self._closed:
            return b""
        self._closed = True
        out = self._finish(StopReason.END_TURN)
        if self._include_usage and self._usage is not None:
            out += frame(
                {
                    "id": self._id,
                    "object": "chat.completion.chunk",
                    "created": self._created,
                    "model": self._model,
                    "choices": [],
                    "usage": usage_to_wire(self._usage),
                }
            )
        return out + DONE

    def error(self, message: str, type: str = "api_error") -> bytes:
        """OpenAI's in-stream error: a data line with an ``error`` object (the SDKs raise on it)."""
        self._closed = True
        return frame({"error": {"message": message, "type": type, "param": None, "code": None}})
