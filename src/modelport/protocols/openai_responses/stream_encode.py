"""Canonical stream events → Responses SSE, in the real API's order and framing.

Every frame is ``event: <type>`` + ``data: {"type": <type>, "sequence_number": n, ...}``, with ``n``
counting from 0. Order: ``response.created``, ``response.in_progress``, then per output item
``output_item.added`` → (``content_part.added`` → ``output_text.delta``… → ``output_text.done`` →
``content_part.done``) or (``function_call_arguments.delta``… → ``.done``) or
(``reasoning_summary_part.added`` → ``reasoning_summary_text.delta``… → ``.done`` →
``reasoning_summary_part.done``) → ``output_item.done``; last ``response.completed`` (or
``response.incomplete`` when cut by max tokens / content filter, ``response.failed`` on failure).

Each canonical part is one output item, and items go out one at a time as the API sends them. Canonical
parts may interleave (parallel tool calls from a Chat upstream), so a part that opens while a tool call
is still streaming is buffered until that call ends. A text-like part that is live when another part
opens is ended right away (such protocols never resume it); should more of it arrive, it continues in a
new item, so nothing is lost.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import orjson

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
from modelport.core.messages import CanonicalRequest
from modelport.core.response import StopReason
from modelport.core.sse import sse_frame
from modelport.core.usage import Usage
from modelport.protocols.openai_responses.echo import echo_fields
from modelport.protocols.openai_responses.items import (
    function_call_item,
    message_item,
    new_id,
    output_text,
    reasoning_item,
    refusal_content,
    summary_text,
)
from modelport.protocols.openai_responses.response import FAILED_MESSAGE, response_id, response_object
from modelport.protocols.openai_responses.status import status_to_wire
from modelport.protocols.openai_responses.usage import usage_to_wire
from modelport.protocols.reasoning_carry import wrap_anthropic

_TEXT_LIKE = frozenset({"text", "refusal", "reasoning"})
_TERMINAL_EVENT = {"completed": "response.completed", "incomplete": "response.incomplete", "failed": "response.failed"}


@dataclass(slots=True, eq=False)
class _Slot:
    """One output item being built from one canonical part (compared by identity: queue membership)."""

    kind: str  # text | refusal | reasoning | tool_call
    pending: list[str] = field(default_factory=list)  # deltas not yet on the wire
    pending_logprobs: list[list[dict[str, Any]]] = field(default_factory=list)  # text: one list per pending delta
    logprobs: list[dict[str, Any]] = field(default_factory=list)  # text: every log probability sent so far
    value: list[str] = field(default_factory=list)  # everything sent so far
    ended: bool = False  # the canonical part ended
    live: bool = False  # output_item.added was sent
    item_id: str = ""
    output_index: int = -1
    call_id: str = ""
    name: str = ""
    reasoning_id: str | None = None
    encrypted_content: str | None = None
    summary_open: bool = False
    signature: str | None = None  # Anthropic thinking carried in encrypted_content (protocols.reasoning_carry)
    redacted: str | None = None

    def encrypted(self) -> str | None:
        return self.encrypted_content or wrap_anthropic("".join(self.value), self.signature, self.redacted)


def _frame(kind: str, payload: dict[str, Any]) -> bytes:
    return sse_frame(kind, orjson.dumps(payload))


class ResponsesStreamEncoder:
    def __init__(
        self, model: str, response_id_: str, include_usage: bool = True, request: CanonicalRequest | None = None
    ) -> None:
        # Responses streams always end with usage in the terminal event; `include_usage` is moot here.
        self._model = model
        self._id = response_id(response_id_)
        self._fields = echo_fields(request)
        self._created = int(time.time())
        self._seq = 0
        self._started = False
        self._closed = False
        self._slots: dict[int, _Slot] = {}  # canonical index → its current slot
        self._queue: list[_Slot] = []  # slots not yet finished on the wire, in opening order
        self._output: list[dict[str, Any]] = []  # finished items, by output_index
        self._stop: StopReason | None = None
        self._cut = False  # the response is cut short: its last item is `incomplete`
        self._release = False  # the last item that ended may be finished (its status is known)
        self._usage: Usage | None = None

    # --- framing ------------------------------------------------------------------------------------

    def _event(self, kind: str, **fields: Any) -> bytes:
        payload: dict[str, Any] = {"type": kind, "sequence_number": self._seq, **fields}
        self._seq += 1
        return _frame(kind, payload)

    def _response(self, status: str, **extra: Any) -> dict[str, Any]:
        return response_object(
            rid=self._id,
            model=self._model,
            created=self._created,
            status=status,
            output=list(self._output),
            fields=self._fields,
            **extra,
        )

    def _start(self, created: int | None = None) -> bytes:
        if self._started:
            return b""
        self._started = True
        if created is not None:
            self._created = created
        response = self._response("in_progress")
        return self._event("response.created", response=response) + self._event(
            "response.in_progress", response=response
        )

    # --- canonical events ---------------------------------------------------------------------------

    def encode(self, event: StreamEvent) -> bytes:
        if self._closed:
            return b""
        match event:
            case ResponseStart(created=created):
                return self._start(created)
            case StreamError(message=message, type=kind):
                return self.error(message, kind)
            case Finish(stop_reason=reason):
                self._stop = reason
                self._cut = status_to_wire(reason)[0] == "incomplete"
                self._release = not self._cut
                return self._pump()
            case UsageUpdate(usage=usage):
                self._usage = usage
                return b""
            case PartEnd(index=index):
                slot = self._slots.get(index)
                if slot is None:
                    return b""
                slot.ended = True
                return self._pump()
            case TextDelta(index=index, text=text, logprobs=logprobs):
                return self._start() + self._delta(index, "text", text, logprobs)
            case RefusalDelta(index=index, text=text):
                return self._start() + self._delta(index, "refusal", text)
            case ReasoningDelta():
                if not event.text and self._done_on_wire(event.index):
                    # Late metadata for a finished item: the final encrypted content (the API re-encrypts
                    # it for `response.completed`) updates the terminal response; a signature has no place.
                    self._late_reasoning(event.index, event.encrypted_content)
                    return b""
                slot = self._slot(event.index, "reasoning")
                if event.id is not None and not slot.live:
                    slot.reasoning_id = event.id
                if event.encrypted_content is not None:
                    slot.encrypted_content = event.encrypted_content
                if event.signature:
                    slot.signature = event.signature
                if event.redacted is not None:
                    slot.redacted = event.redacted
                return self._start() + self._delta(event.index, "reasoning", event.text)
            case ToolCallStart(index=index, id=call_id, name=name):
                if index in self._slots:
                    return b""
                slot = self._slot(index, "tool_call")
                slot.call_id, slot.name = call_id, name
                return self._start() + self._pump()
            case ToolCallDelta(index=index, arguments=fragment):
                return self._start() + self._delta(index, "tool_call", fragment)
        return b""

    def _done_on_wire(self, index: int) -> bool:
        slot = self._slots.get(index)
        return slot is not None and slot.live and slot not in self._queue

    def _slot(self, index: int, kind: str) -> _Slot:
        """The slot of a canonical part: a new one when the part is new, or when a part already finished
        on the wire gets more content (it continues in a new item)."""
        slot = self._slots.get(index)
        if slot is None or self._done_on_wire(index):
            fresh = _Slot(kind)
            if slot is not None:  # a continuation keeps the call identity
                fresh.call_id, fresh.name = slot.call_id, slot.name
                fresh.encrypted_content = slot.encrypted_content
            slot = self._slots[index] = fresh
            self._queue.append(slot)
        return slot

    def _late_reasoning(self, index: int, encrypted_content: str | None) -> None:
        slot = self._slots[index]
        if encrypted_content is not None and slot.kind == "reasoning":
            slot.encrypted_content = encrypted_content
            item = self._output[slot.output_index]
            self._output[slot.output_index] = {**item, "encrypted_content": encrypted_content}

    def _delta(self, index: int, kind: str, text: str, logprobs: list[dict[str, Any]] | None = None) -> bytes:
        if not text and self._done_on_wire(index):
            return b""  # nothing new for an item that is already complete
        slot = self._slot(index, kind)
        if text:
            slot.pending.append(text)
            if kind == "text":
                slot.pending_logprobs.append(logprobs or [])
        return self._pump()

    def _pump(self) -> bytes:
        """Put on the wire whatever the head of the queue allows (see the module docstring)."""
        out = b""
        while self._queue:
            head = self._queue[0]
            out += self._open(head) + self._flush(head)
            waiting = len(self._queue) > 1
            # The last item that ended waits for the stop reason (or the next item): an item cut by the
            # output cap is `incomplete` in its own `output_item.done`, not only in the final response.
            if (head.ended and (waiting or self._release)) or (waiting and head.kind in _TEXT_LIKE):
                out += self._finish(head)
                self._queue.pop(0)
                continue
            break
        return out

    # --- one output item ----------------------------------------------------------------------------

    def _open(self, slot: _Slot) -> bytes:
        if slot.live:
            return b""
        slot.live = True
        slot.output_index = len(self._output)  # only the head of the queue is ever live
        oi = slot.output_index
        if slot.kind == "tool_call":
            slot.item_id = new_id("fc")
            item = function_call_item(slot.item_id, slot.call_id, slot.name, "", "in_progress")
            return self._event("response.output_item.added", output_index=oi, item=item)
        if slot.kind == "reasoning":
            slot.item_id = slot.reasoning_id or new_id("rs")
            item = reasoning_item(slot.item_id, "", slot.encrypted_content)
            return self._event("response.output_item.added", output_index=oi, item=item)
        slot.item_id = new_id("msg")
        part = output_text("") if slot.kind == "text" else refusal_content("")
        return self._event(
            "response.output_item.added", output_index=oi, item=message_item(slot.item_id, [], "in_progress")
        ) + self._event(
            "response.content_part.added", item_id=slot.item_id, output_index=oi, content_index=0, part=part
        )

    def _flush(self, slot: _Slot) -> bytes:
        out = b""
        ids = {"item_id": slot.item_id, "output_index": slot.output_index}
        for n, text in enumerate(slot.pending):
            slot.value.append(text)
            if slot.kind == "text":
                logprobs = slot.pending_logprobs[n]
                slot.logprobs.extend(logprobs)
                out += self._event("response.output_text.delta", **ids, content_index=0, delta=text, logprobs=logprobs)
            elif slot.kind == "refusal":
                out += self._event("response.refusal.delta", **ids, content_index=0, delta=text)
            elif slot.kind == "tool_call":
                out += self._event("response.function_call_arguments.delta", **ids, delta=text)
            else:
                if not slot.summary_open:
                    slot.summary_open = True
                    out += self._event(
                        "response.reasoning_summary_part.added", **ids, summary_index=0, part=summary_text("")
                    )
                out += self._event("response.reasoning_summary_text.delta", **ids, summary_index=0, delta=text)
        slot.pending.clear()
        slot.pending_logprobs.clear()
        return out

    def _finish(self, slot: _Slot) -> bytes:
        """The done events of a live slot; its item joins the final output. The last item of a response cut
        short (max output tokens, content filter) is `incomplete`."""
        value = "".join(slot.value)
        status = "incomplete" if self._cut and slot is self._queue[-1] else "completed"
        ids = {"item_id": slot.item_id, "output_index": slot.output_index}
        out = b""
        if slot.kind == "tool_call":
            if not value.strip():
                # No argument text (an Anthropic tool without input): clients parse arguments as JSON.
                value = "{}"
                out += self._event("response.function_call_arguments.delta", **ids, delta=value)
            out += self._event("response.function_call_arguments.done", **ids, name=slot.name, arguments=value)
            item = function_call_item(slot.item_id, slot.call_id, slot.name, value, status)
        elif slot.kind == "reasoning":
            if slot.summary_open:
                out += self._event("response.reasoning_summary_text.done", **ids, summary_index=0, text=value)
                out += self._event(
                    "response.reasoning_summary_part.done", **ids, summary_index=0, part=summary_text(value)
                )
            item = reasoning_item(slot.item_id, value, slot.encrypted())
        else:
            if slot.kind == "text":
                out += self._event(
                    "response.output_text.done", **ids, content_index=0, text=value, logprobs=slot.logprobs
                )
                part = output_text(value)
                part["logprobs"] = slot.logprobs
            else:
                out += self._event("response.refusal.done", **ids, content_index=0, refusal=value)
                part = refusal_content(value)
            out += self._event("response.content_part.done", **ids, content_index=0, part=part)
            item = message_item(slot.item_id, [part], status)
        self._output.append(item)
        return out + self._event("response.output_item.done", output_index=slot.output_index, item=item)

    # --- the end ------------------------------------------------------------------------------------

    def close(self) -> bytes:
        if self._closed:
            return b""
        out = self._start()
        status, incomplete = status_to_wire(self._stop)
        self._cut, self._release = status == "incomplete", True
        for slot in self._queue:
            slot.ended = True
        out += self._pump()
        self._closed = True
        if status == "failed":
            return out + self._failed(FAILED_MESSAGE, "server_error")
        response = self._response(status, usage=self._usage_wire(), incomplete_details=incomplete)
        return out + self._event(_TERMINAL_EVENT[status], response=response)

    def _usage_wire(self) -> dict[str, Any] | None:
        return usage_to_wire(self._usage) if self._usage is not None else None

    def _failed(self, message: str, code: str) -> bytes:
        response = self._response("failed", usage=self._usage_wire(), error={"code": code, "message": message})
        return self._event("response.failed", response=response)

    def error(self, message: str, type: str = "api_error") -> bytes:
        """An ``error`` event, then, once this encoder has started the response, ``response.failed`` so
        clients waiting for a terminal event stop. An encoder that has sent nothing yet (e.g. the fast path
        reporting a broken relayed stream, whose ``response.created`` came from the upstream) sends the
        ``error`` event alone: a second ``response.created`` or a ``response.failed`` under another id
        would contradict the response the client already has."""
        if self._closed:
            return b""
        self._closed = True
        code = "rate_limit_exceeded" if type in ("rate_limit_exceeded", "request_limited") else "server_error"
        out = self._event("error", code=code, message=message, param=None)
        return out + self._failed(message, code) if self._started else out
