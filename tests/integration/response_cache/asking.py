"""One request in any of the three protocols through the official SDKs, streamed or not, and what came back:
the response headers, the answer's text, its id and, for a stream, the event types in order."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tests.integration.response_cache.conftest import Cached

PROTOCOLS = ("chat", "responses", "messages")
# Upstream models of every kind (the fake renders each protocol).
UPSTREAMS = ("fake/chat", "fake/responses", "fake/claude")


@dataclass
class Got:
    headers: dict[str, str]
    text: str
    id: str
    events: list[str] = field(default_factory=list)
    tool_calls: int = 0

    @property
    def cache(self) -> str | None:
        return self.headers.get("x-modelport-cache")


def ask(
    srv: Cached,
    key: str,
    protocol: str,
    model: str,
    prompt: str,
    *,
    stream: bool = False,
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> Got:
    extra_headers = headers or {}
    if protocol == "chat":
        chat = srv.openai(key).chat.completions.with_raw_response.create(
            model=model,
            messages=[{"role": "user", "content": prompt}],
            stream=stream,
            extra_headers=extra_headers,
            **extra,
        )
        return _chat(dict(chat.headers), chat.parse(), stream)
    if protocol == "responses":
        resp = srv.openai(key).responses.with_raw_response.create(
            model=model, input=prompt, stream=stream, extra_headers=extra_headers, **extra
        )
        return _responses(dict(resp.headers), resp.parse(), stream)
    msg = srv.anthropic(key).messages.with_raw_response.create(
        model=model,
        max_tokens=200,
        messages=[{"role": "user", "content": prompt}],
        stream=stream,
        extra_headers=extra_headers,
        **extra,
    )
    return _messages(dict(msg.headers), msg.parse(), stream)


def _chat(headers: dict[str, str], parsed: Any, stream: bool) -> Got:
    if not stream:
        message = parsed.choices[0].message
        return Got(headers, message.content or "", parsed.id, tool_calls=len(message.tool_calls or []))
    got = Got(headers, "", "")
    for chunk in parsed:
        got.id = chunk.id
        got.events.append("chunk")
        for choice in chunk.choices:
            got.text += choice.delta.content or ""
            got.tool_calls += sum(1 for c in choice.delta.tool_calls or [] if c.id)
    return got


def _responses(headers: dict[str, str], parsed: Any, stream: bool) -> Got:
    if not stream:
        calls = sum(1 for item in parsed.output if item.type == "function_call")
        return Got(headers, parsed.output_text, parsed.id, tool_calls=calls)
    got = Got(headers, "", "")
    for event in parsed:
        got.events.append(event.type)
        if event.type == "response.output_text.delta":
            got.text += event.delta
        elif event.type == "response.created":
            got.id = event.response.id
        elif event.type == "response.output_item.added" and event.item.type == "function_call":
            got.tool_calls += 1
    return got


def _messages(headers: dict[str, str], parsed: Any, stream: bool) -> Got:
    if not stream:
        text = "".join(b.text for b in parsed.content if b.type == "text")
        return Got(headers, text, parsed.id, tool_calls=sum(1 for b in parsed.content if b.type == "tool_use"))
    got = Got(headers, "", "")
    for event in parsed:
        got.events.append(event.type)
        if event.type == "message_start":
            got.id = event.message.id
        elif event.type == "content_block_delta" and event.delta.type == "text_delta":
            got.text += event.delta.text
        elif event.type == "content_block_start" and event.content_block.type == "tool_use":
            got.tool_calls += 1
    return got
