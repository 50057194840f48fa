"""The OpenAI Agents SDK (`openai-agents`) through a real `serve` (issue 43): a two-turn agent with a tool,
its state kept at the gateway by `previous_response_id` or by a conversation, on each upstream kind. The
fake upstream checks that the second turn carries the first one (question, tool call, tool output, answer)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from typing import Any

import openai
import pytest
from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

from tests.integration.gateway.conftest import Gateway
from tests.support.fake_upstream import Reply


@pytest.fixture(autouse=True, scope="module")
def _no_tracing() -> Iterator[None]:
    set_tracing_disabled(True)  # the SDK would export its traces to OpenAI
    yield
    set_tracing_disabled(False)


@function_tool
def code_word() -> str:
    """The secret code word."""
    return "KESTREL"


@pytest.fixture
async def client(gw: Gateway) -> AsyncIterator[openai.AsyncOpenAI]:
    async with openai.AsyncOpenAI(base_url=gw.server.text_url + "/v1", api_key=gw.key, max_retries=0) as made:
        yield made


def _agent(client: openai.AsyncOpenAI, model: str) -> Agent[Any]:
    return Agent(
        name="keeper",
        instructions="Answer briefly.",
        model=OpenAIResponsesModel(model=model, openai_client=client),
        tools=[code_word],
    )


def _in_order(text: str, *parts: str) -> None:
    at = [text.find(p) for p in parts]
    assert all(i >= 0 for i in at), (parts, text)
    assert at == sorted(at), (parts, text)


def _script_first_turn(gw: Gateway) -> None:
    gw.upstream.push(Reply.tool_call("code_word", {}, call_id="call_word"), Reply.text("The word is KESTREL."))


def _check_second_turn(gw: Gateway, answer: str) -> None:
    assert answer == "It was KESTREL."
    sent = gw.upstream.last_request
    assert sent is not None
    text = json.dumps(sent.json)
    _in_order(text, "What is the code word?", "code_word", "KESTREL", "The word is KESTREL.", "Say it again.")
    assert "previous_response_id" not in sent.json and "conversation" not in sent.json


@pytest.mark.parametrize("model", ["fake/chat", "fake/claude", "fake/responses"])
async def test_a_two_turn_agent_by_previous_response_id(gw: Gateway, client: openai.AsyncOpenAI, model: str) -> None:
    agent = _agent(client, model)
    _script_first_turn(gw)
    # The SDK chains the tool call's output to the call by id within the run, too.
    first = await Runner.run(agent, "What is the code word?", auto_previous_response_id=True)
    assert first.final_output == "The word is KESTREL." and first.last_response_id is not None
    gw.upstream.push(Reply.text("It was KESTREL."))
    second = await Runner.run(agent, "Say it again.", previous_response_id=first.last_response_id)
    _check_second_turn(gw, second.final_output)


@pytest.mark.parametrize("model", ["fake/chat", "fake/claude", "fake/responses"])
async def test_a_two_turn_agent_in_a_conversation(gw: Gateway, client: openai.AsyncOpenAI, model: str) -> None:
    agent = _agent(client, model)
    conversation = await client.conversations.create()
    _script_first_turn(gw)
    first = await Runner.run(agent, "What is the code word?", conversation_id=conversation.id)
    assert first.final_output == "The word is KESTREL."
    gw.upstream.push(Reply.text("It was KESTREL."))
    second = await Runner.run(agent, "Say it again.", conversation_id=conversation.id)
    _check_second_turn(gw, second.final_output)
