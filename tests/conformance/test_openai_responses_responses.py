"""Responses (non-stream): recorded Response bodies → canonical answer → re-encoded Response.

Facts (text, refusal, function calls, reasoning, status, usage) are read from the raw recorded JSON
here, independently of the codec, and compared with the decoded answer and with our re-encoding, which
must validate against the published ``Response`` schema.
"""

from __future__ import annotations

from typing import Any

import pytest

from modelport.core import CanonicalResponse, OpaquePart, StopReason, Usage
from modelport.protocols.openai_responses import CODEC
from tests.support.cassettes import Interaction, interactions
from tests.support.openapi_schema import assert_valid

RESPONSES = [
    it
    for it in interactions("openai_responses", path="/v1/responses")
    if it.status == 200 and isinstance(it.response_json, dict)
]


def test_recordings_cover_responses() -> None:
    assert len(RESPONSES) >= 15


_STATUSES = ("completed", "incomplete", "failed", "cancelled", "queued", "in_progress")


def _facts(body: dict[str, Any]) -> dict[str, Any]:
    """What a client reads from a Response body. (The ``previous_response_id`` cassette is hand-written
    with ``status: complete``, which the decoder leniently reads as completed.)"""
    text, refusal, calls, reasoning = "", "", [], []
    for item in body["output"]:
        if item["type"] == "message":
            for part in item["content"]:
                text += part.get("text", "") if part["type"] == "output_text" else ""
                refusal += part.get("refusal", "") if part["type"] == "refusal" else ""
        elif item["type"] == "function_call":
            calls.append((item["call_id"], item["name"], item["arguments"]))
        elif item["type"] == "reasoning":
            reasoning.append((item["id"], item.get("encrypted_content"), [s["text"] for s in item["summary"]]))
    usage = body.get("usage") or {}
    return {
        "status": body["status"] if body["status"] in _STATUSES else "completed",
        "incomplete": (body.get("incomplete_details") or {}).get("reason"),
        "text": text,
        "refusal": refusal,
        "calls": calls,
        "reasoning": reasoning,
        "usage": (
            usage.get("input_tokens"),
            usage.get("input_tokens_details", {}).get("cached_tokens"),
            usage.get("output_tokens"),
            usage.get("output_tokens_details", {}).get("reasoning_tokens"),
        ),
    }


def _without_hosted_items(body: dict[str, Any]) -> dict[str, Any]:
    """Hosted-tool items are relayed verbatim from the upstream (whose own ``web_search_call`` does not
    match the published schema); only the items we build are checked."""
    ours = ("message", "function_call", "reasoning")
    return {**body, "output": [item for item in body["output"] if item["type"] in ours]}


@pytest.mark.parametrize("it", RESPONSES, ids=lambda it: it.id)
def test_decoded_response_matches_recording(it: Interaction) -> None:
    body = it.response_json
    facts = _facts(body)
    resp = CODEC.decode_response(body)
    assert resp.id == body["id"] and resp.model == body["model"] and resp.created == body["created_at"]
    assert resp.text == facts["text"]
    assert (resp.refusal or "") == facts["refusal"]
    assert [(c.id, c.name, c.arguments) for c in resp.tool_calls] == facts["calls"]
    assert [(r.id, r.encrypted_content) for r in resp.reasoning] == [(r[0], r[1]) for r in facts["reasoning"]]
    assert [r.text for r in resp.reasoning] == ["\n\n".join(r[2]) for r in facts["reasoning"]]
    expected_stop = StopReason.TOOL_USE if facts["calls"] else StopReason.END_TURN
    assert resp.stop_reason is expected_stop
    assert resp.usage is not None
    assert (
        resp.usage.input_tokens,
        resp.usage.cache_read_tokens,
        resp.usage.output_tokens,
        resp.usage.reasoning_tokens,
    ) == facts["usage"]
    hosted = [item for item in body["output"] if item["type"] not in ("message", "function_call", "reasoning")]
    assert [p.data for p in resp.content if isinstance(p, OpaquePart)] == hosted


def _without_empty_logprobs(output: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Older recordings lack ``logprobs`` on ``output_text``, which the current schema requires; the
    encoder adds an empty list."""
    items = []
    for item in output:
        if item["type"] == "message":
            content = [{k: v for k, v in c.items() if (k, v) != ("logprobs", [])} for c in item["content"]]
            item = {**item, "content": content}
        items.append(item)
    return items


@pytest.mark.parametrize("it", RESPONSES, ids=lambda it: it.id)
def test_reencoded_response_is_the_recording(it: Interaction) -> None:
    """Same protocol: the re-encoded body keeps the recording's output items and facts, and is valid."""
    body = it.response_json
    out = CODEC.encode_response(CODEC.decode_response(body), body["model"])
    assert_valid(_without_hosted_items(out), "Response")
    assert out["object"] == "response" and out["id"] == body["id"]
    assert _without_empty_logprobs(out["output"]) == _without_empty_logprobs(body["output"])
    assert _facts(out) == _facts(body)
    assert out["usage"]["total_tokens"] == body["usage"]["total_tokens"]


@pytest.mark.parametrize("it", RESPONSES, ids=lambda it: it.id)
def test_response_from_another_protocol_is_valid(it: Interaction) -> None:
    """Without the Responses shape hints (an answer from another upstream kind) the body is rebuilt from
    canonical facts alone: still valid, same facts, new item ids."""
    decoded = CODEC.decode_response(it.response_json)
    foreign = CanonicalResponse(
        id="chatcmpl-123",
        model="gpt-4o",
        created=decoded.created,
        content=[p for p in decoded.content if not isinstance(p, OpaquePart)],
        stop_reason=decoded.stop_reason,
        usage=decoded.usage,
        source_protocol="openai_chat",
        extras={"system_fingerprint": "fp_1"},
    )
    out = CODEC.encode_response(foreign, "openai/gpt-4o")
    assert_valid(out, "Response")
    assert out["id"] == "resp_chatcmpl-123" and out["model"] == "openai/gpt-4o"
    assert "system_fingerprint" not in out
    expected = _facts(_without_hosted_items(it.response_json))
    got = _facts(out)
    # Summaries are re-joined into one summary part per reasoning item.
    expected["reasoning"] = [(i, e, ["\n\n".join(s)] if s else []) for i, e, s in expected["reasoning"]]
    assert got == expected


def test_max_tokens_response_is_incomplete() -> None:
    resp = CanonicalResponse(
        id="resp_1",
        model="m",
        created=1,
        content=[],
        stop_reason=StopReason.MAX_TOKENS,
        usage=Usage(input_tokens=5, output_tokens=16, cache_read_tokens=2, reasoning_tokens=3),
    )
    resp.content.append(CODEC.decode_response({"output": [_message("cut sh")]}).content[0])
    out = CODEC.encode_response(resp, "m")
    assert_valid(out, "Response")
    assert out["status"] == "incomplete"
    assert out["incomplete_details"] == {"reason": "max_output_tokens"}
    assert out["output"][0]["status"] == "incomplete"
    assert out["usage"] == {
        "input_tokens": 5,
        "input_tokens_details": {"cached_tokens": 2, "cache_write_tokens": 0},
        "output_tokens": 16,
        "output_tokens_details": {"reasoning_tokens": 3},
        "total_tokens": 21,
    }
    assert CODEC.decode_response(out).stop_reason is StopReason.MAX_TOKENS


def _message(text: str) -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "status": "incomplete",
        "role": "assistant",
        "content": [{"type": "output_text", "annotations": [], "logprobs": [], "text": text}],
    }


def test_usage_from_body_reads_cached_and_reasoning_tokens() -> None:
    it = next(it for it in RESPONSES if it.cassette == "test_openai_responses_prompt_cache_e2e" and it.position == 1)
    usage = CODEC.usage_from_body(it.response_json)
    raw = it.response_json["usage"]
    assert usage is not None
    assert usage.input_tokens == raw["input_tokens"]
    assert usage.cache_read_tokens == raw["input_tokens_details"]["cached_tokens"] > 0
    assert usage.uncached_input_tokens == raw["input_tokens"] - raw["input_tokens_details"]["cached_tokens"]
    assert usage.output_tokens == raw["output_tokens"]
