"""The coding-task fake's vendor rules answer 400 where the vendors do, so an agent test can fail."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from tests.support import vendor_rules as rules

SEAL = rules.Seal()
BETA = {"anthropic-beta": "claude-code-20250219,mid-conversation-system-2026-04-07"}


def anthropic_turn2(thinking_block: dict[str, Any] | None) -> dict[str, Any]:
    assistant: list[dict[str, Any]] = [
        {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
    ]
    if thinking_block is not None:
        assistant.insert(0, thinking_block)
    return {
        "model": "m",
        "max_tokens": 2000,
        "thinking": {"type": "adaptive"},
        "messages": [
            {"role": "user", "content": "run ls"},
            {"role": "system", "content": "note"},
            {"role": "assistant", "content": assistant},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.py"}]},
        ],
    }


def signed(text: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": text, "signature": SEAL.sign({"thinking": text})}


def test_anthropic_turn_two_with_its_signed_thinking_is_accepted() -> None:
    assert rules.check_anthropic(anthropic_turn2(signed("list first")), BETA, SEAL) is None


@pytest.mark.parametrize(
    ("block", "headers", "message"),
    [
        (None, BETA, "Expected `thinking` or `redacted_thinking`, but found `tool_use`"),
        ({**signed("list first"), "thinking": "edited"}, BETA, "Invalid `signature`"),
        ({"type": "thinking", "thinking": "x", "signature": "forged.sig"}, BETA, "Invalid `signature`"),
        (signed("list first"), {}, "messages.1.role"),  # a system turn without the beta
    ],
)
def test_anthropic_violations(block: dict[str, Any] | None, headers: dict[str, str], message: str) -> None:
    error = rules.check_anthropic(anthropic_turn2(block), headers, SEAL)
    assert error is not None and message in error.message


def test_anthropic_tool_results_must_answer_the_previous_turn() -> None:
    body = anthropic_turn2(signed("x"))
    body["messages"][3]["content"][0]["tool_use_id"] = "toolu_other"
    error = rules.check_anthropic(body, BETA, SEAL)
    assert error is not None and "unexpected `tool_use_id`" in error.message
    body = anthropic_turn2(signed("x"))
    body["thinking"] = {"type": "enabled", "budget_tokens": 4000}
    error = rules.check_anthropic(body, BETA, SEAL)
    assert error is not None and "greater than `thinking.budget_tokens`" in error.message
    body["reasoning_effort"] = "high"
    error = rules.check_anthropic(body, BETA, SEAL)
    assert error is not None and "Extra inputs" in error.message


def chat_turn2(arguments: str) -> dict[str, Any]:
    call = {"id": "call_1", "type": "function", "function": {"name": "Bash", "arguments": arguments}}
    return {
        "model": "m",
        "messages": [
            {"role": "user", "content": "run ls"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "call_1", "content": "a.py"},
        ],
    }


def test_chat_rules() -> None:
    assert rules.check_chat(chat_turn2('{"command":"ls"}')) is None
    error = rules.check_chat(chat_turn2(""))
    assert error is not None and error.param == "messages[1].tool_calls[0].function.arguments"
    orphan = chat_turn2("{}")
    del orphan["messages"][1]
    error = rules.check_chat(orphan)
    assert error is not None and "must be a response to a preceeding message" in error.message
    error = rules.check_chat({**chat_turn2("{}"), "thinking": {"type": "adaptive"}})
    assert error is not None and error.message == "Unrecognized request argument supplied: thinking"


def responses_turn2(reasoning: dict[str, Any] | None, arguments: str = '{"cmd":"ls"}') -> dict[str, Any]:
    items: list[dict[str, Any]] = [{"type": "message", "role": "user", "content": "run ls"}]
    if reasoning is not None:
        items.append(reasoning)
    items.append({"type": "function_call", "call_id": "call_1_r", "name": "exec_command", "arguments": arguments})
    items.append({"type": "function_call_output", "call_id": "call_1_r", "output": "a.py"})
    return {"model": "m", "input": items, "store": False, "include": ["reasoning.encrypted_content"]}


def test_responses_rules() -> None:
    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [],
        "encrypted_content": SEAL.sign({"call_id": "call_1_r"}),
    }
    assert rules.check_responses(responses_turn2(reasoning), SEAL) is None
    error = rules.check_responses(responses_turn2(None), SEAL)
    assert error is not None and "without its required 'reasoning' item" in error.message
    forged = {**copy.deepcopy(reasoning), "encrypted_content": "bm9wZQ.abc"}
    error = rules.check_responses(responses_turn2(forged), SEAL)
    assert error is not None and error.code == "invalid_encrypted_content"
    error = rules.check_responses(responses_turn2(reasoning, arguments="{cmd"), SEAL)
    assert error is not None and error.param == "input[2].arguments"
    stray = responses_turn2(reasoning)
    stray["input"][-1]["call_id"] = "call_9"
    error = rules.check_responses(stray, SEAL)
    assert error is not None and "No tool call found" in error.message
