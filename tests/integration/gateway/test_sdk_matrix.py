"""Every inbound protocol against every upstream kind, streaming and not, through the official SDKs."""

from __future__ import annotations

import pytest

from tests.integration.gateway import sdk_calls
from tests.integration.gateway.conftest import SINGLE, Gateway
from tests.support.fake_upstream import Reply, ToolCall, Usage

INBOUND = ["chat", "responses", "messages"]
MODELS = list(SINGLE)


def call(gw: Gateway, inbound: str, model: str, *, stream: bool, tools: bool = False) -> sdk_calls.Facts:
    if inbound == "chat":
        return sdk_calls.chat(gw.openai, model, stream=stream, tools=tools)
    if inbound == "responses":
        return sdk_calls.responses(gw.openai, model, stream=stream, tools=tools)
    return sdk_calls.messages(gw.anthropic, model, stream=stream, tools=tools)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize("inbound", INBOUND)
def test_text_answer_and_usage(gw: Gateway, inbound: str, model: str, stream: bool) -> None:
    gw.upstream.push(Reply.text("Hello there, dear friend.", usage=Usage(input_tokens=12, output_tokens=4)))
    facts = call(gw, inbound, model, stream=stream)
    assert facts.text == "Hello there, dear friend."
    assert facts.tool_calls == []
    assert (facts.input_tokens, facts.output_tokens) == (12, 4)
    sent = gw.upstream.last_request
    assert sent is not None
    assert sent.json["model"] == "up-" + SINGLE[model]  # model rewritten to the deployment's
    assert "sk-upstream-secret" in (sent.headers.get("authorization", "") + sent.headers.get("x-api-key", ""))


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("model", ["fake/chat", "fake/responses", "fake/claude"])
@pytest.mark.parametrize("inbound", INBOUND)
def test_parallel_tool_calls(gw: Gateway, inbound: str, model: str, stream: bool) -> None:
    gw.upstream.push(
        Reply.tool_calls(
            [ToolCall("get_weather", {"city": "Paris"}, "call_1"), ToolCall("get_weather", {"city": "Oslo"}, "call_2")]
        )
    )
    facts = call(gw, inbound, model, stream=stream, tools=True)
    assert facts.tool_calls == [("get_weather", {"city": "Paris"}), ("get_weather", {"city": "Oslo"})]
    expected_finish = {"chat": "tool_calls", "responses": "completed", "messages": "tool_use"}[inbound]
    assert facts.finish == expected_finish


@pytest.mark.parametrize("inbound", INBOUND)
def test_max_tokens_stop_reason_maps(gw: Gateway, inbound: str) -> None:
    for model in ("fake/chat", "fake/claude", "fake/responses"):
        gw.upstream.push(Reply.text("cut short", finish="length"))
        facts = call(gw, inbound, model, stream=False)
        assert facts.finish == {"chat": "length", "responses": "incomplete", "messages": "max_tokens"}[inbound]
