"""Drive the gateway with the official SDKs, one helper per inbound protocol, returning plain facts."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import anthropic
import openai

WEATHER_TOOL_CHAT: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
}
WEATHER_TOOL_RESPONSES = {
    "type": "function",
    "name": "get_weather",
    "description": "Weather for a city",
    "parameters": WEATHER_TOOL_CHAT["function"]["parameters"],
}
WEATHER_TOOL_MESSAGES = {
    "name": "get_weather",
    "description": "Weather for a city",
    "input_schema": WEATHER_TOOL_CHAT["function"]["parameters"],
}


@dataclass
class Facts:
    text: str = ""
    tool_calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    input_tokens: int | None = None
    output_tokens: int | None = None
    finish: str | None = None


def chat(client: openai.OpenAI, model: str, *, stream: bool, tools: bool = False, prompt: str = "Hi") -> Facts:
    kwargs: dict[str, Any] = {"model": model, "messages": [{"role": "user", "content": prompt}], "max_tokens": 50}
    if tools:
        kwargs["tools"] = [WEATHER_TOOL_CHAT]
    facts = Facts()
    if not stream:
        r = client.chat.completions.create(**kwargs)
        msg = r.choices[0].message
        facts.text = msg.content or ""
        facts.tool_calls = [
            (c.function.name, json.loads(c.function.arguments)) for c in msg.tool_calls or [] if c.type == "function"
        ]
        facts.finish = r.choices[0].finish_reason
        if r.usage:
            facts.input_tokens, facts.output_tokens = r.usage.prompt_tokens, r.usage.completion_tokens
        return facts
    calls: dict[int, list[str]] = {}
    names: dict[int, str] = {}
    with client.chat.completions.create(**kwargs, stream=True, stream_options={"include_usage": True}) as s:
        for chunk in s:
            if chunk.usage:
                facts.input_tokens, facts.output_tokens = chunk.usage.prompt_tokens, chunk.usage.completion_tokens
            for choice in chunk.choices:
                facts.text += choice.delta.content or ""
                facts.finish = choice.finish_reason or facts.finish
                for tc in choice.delta.tool_calls or []:
                    if tc.function and tc.function.name:
                        names[tc.index] = tc.function.name
                    calls.setdefault(tc.index, []).append((tc.function.arguments or "") if tc.function else "")
    facts.tool_calls = [(names[i], json.loads("".join(calls[i]))) for i in sorted(calls)]
    return facts


def responses(client: openai.OpenAI, model: str, *, stream: bool, tools: bool = False, prompt: str = "Hi") -> Facts:
    kwargs: dict[str, Any] = {"model": model, "input": prompt, "max_output_tokens": 50}
    if tools:
        kwargs["tools"] = [WEATHER_TOOL_RESPONSES]
    if stream:
        with client.responses.stream(**kwargs) as s:
            for _event in s:
                pass
            r = s.get_final_response()
    else:
        r = client.responses.create(**kwargs)
    facts = Facts(text=r.output_text, finish=r.status)
    facts.tool_calls = [(o.name, json.loads(o.arguments)) for o in r.output if o.type == "function_call"]
    if r.usage:
        facts.input_tokens, facts.output_tokens = r.usage.input_tokens, r.usage.output_tokens
    return facts


def messages(
    client: anthropic.Anthropic, model: str, *, stream: bool, tools: bool = False, prompt: str = "Hi"
) -> Facts:
    kwargs: dict[str, Any] = {"model": model, "max_tokens": 50, "messages": [{"role": "user", "content": prompt}]}
    if tools:
        kwargs["tools"] = [WEATHER_TOOL_MESSAGES]
    if stream:
        with client.messages.stream(**kwargs) as s:
            for _event in s:
                pass
            m = s.get_final_message()
    else:
        m = client.messages.create(**kwargs)
    facts = Facts(finish=m.stop_reason)
    facts.text = "".join(b.text for b in m.content if b.type == "text")
    facts.tool_calls = [(b.name, dict(b.input)) for b in m.content if b.type == "tool_use"]
    facts.input_tokens = (
        m.usage.input_tokens + (m.usage.cache_read_input_tokens or 0) + (m.usage.cache_creation_input_tokens or 0)
    )
    facts.output_tokens = m.usage.output_tokens
    return facts
