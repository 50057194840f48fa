"""Responses streams: recorded SSE → canonical events → accumulated answer and re-encoded SSE.

The facts of each recording (text, function calls, reasoning items, status, usage) are read from the
raw final ``response.completed`` payload, independently of the codec, and compared with:
- the `StreamAccumulator` fold of the decoded events;
- the stream our encoder writes for those events: every frame validates against its
  ``ResponseStreamEvent`` member schema, carries a matching ``event:`` line and a ``sequence_number``
  counting from 0, follows the API's event order, and decodes back to the same facts.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

import pytest

from modelport.core import (
    ReasoningDelta,
    ResponseStart,
    StreamAccumulator,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    parse_sse,
)
from modelport.protocols.openai_responses import CODEC
from tests.support.cassettes import Interaction, interactions
from tests.support.openapi_schema import assert_valid, load_spec

STREAMS = [it for it in interactions("openai_responses", path="/v1/responses") if it.status == 200 and it.is_sse]
TERMINAL = ("response.completed", "response.incomplete", "response.failed")


def test_recordings_cover_streams() -> None:
    assert len(STREAMS) >= 6
    kinds = {json.loads(d)["type"] for it in STREAMS for _, d in _raw_frames(it.sse_body)}
    for kind in ("response.function_call_arguments.delta", "response.reasoning_summary_text.delta"):
        assert kind in kinds


@cache
def event_schemas() -> dict[str, str]:
    """``type`` value → component schema name, for every member of ``ResponseStreamEvent``."""
    schemas = load_spec()["components"]["schemas"]
    out = {}
    for ref in schemas["ResponseStreamEvent"]["anyOf"]:
        name = ref["$ref"].rsplit("/", 1)[-1]
        out[schemas[name]["properties"]["type"]["enum"][0]] = name
    return out


def _raw_frames(body: str) -> list[tuple[str | None, str]]:
    """(event name, data) of each SSE frame, read without the codec's parser."""
    frames = []
    for block in body.replace("\r\n", "\n").split("\n\n"):
        name = None
        data = []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip())
        if data:
            frames.append((name, "\n".join(data)))
    return frames


def _final_response(body: str) -> dict[str, Any]:
    finals = [json.loads(d)["response"] for _, d in _raw_frames(body) if json.loads(d)["type"] in TERMINAL]
    assert len(finals) == 1
    final: dict[str, Any] = finals[0]
    return final


def _facts(response: dict[str, Any]) -> dict[str, Any]:
    text, calls, reasoning = "", [], []
    for item in response["output"]:
        if item["type"] == "message":
            text += "".join(p.get("text", "") for p in item["content"] if p["type"] == "output_text")
        elif item["type"] == "function_call":
            calls.append((item["call_id"], item["name"], item["arguments"]))
        elif item["type"] == "reasoning":
            summary = "\n\n".join(s["text"] for s in item["summary"])
            reasoning.append((item["id"], item.get("encrypted_content"), summary))
    usage = response.get("usage") or {}
    return {
        "status": response["status"],
        "text": text,
        "calls": calls,
        "reasoning": reasoning,
        "usage": (
            usage.get("input_tokens"),
            usage.get("input_tokens_details", {}).get("cached_tokens"),
            usage.get("output_tokens"),
            usage.get("output_tokens_details", {}).get("reasoning_tokens"),
        ),
    }


def _decode(body: bytes | str) -> list[StreamEvent]:
    decoder = CODEC.stream_decoder()
    events: list[StreamEvent] = []
    for sse in parse_sse(body if isinstance(body, bytes) else body.encode()):
        events.extend(decoder.feed(sse.event, sse.data))
    return events + decoder.close()


def _accumulated_facts(events: list[StreamEvent]) -> dict[str, Any]:
    acc = StreamAccumulator()
    acc.feed_all(events)
    resp = acc.response()
    assert resp.usage is not None
    stop = resp.stop_reason.value if resp.stop_reason else None
    return {
        "status": {"end_turn": "completed", "tool_use": "completed", "max_tokens": "incomplete"}.get(stop or ""),
        "text": resp.text,
        "calls": [(c.id, c.name, c.arguments) for c in resp.tool_calls],
        "reasoning": [(r.id, r.encrypted_content, r.text) for r in resp.reasoning],
        "usage": (
            resp.usage.input_tokens,
            resp.usage.cache_read_tokens,
            resp.usage.output_tokens,
            resp.usage.reasoning_tokens,
        ),
    }


def _encode(events: list[StreamEvent]) -> bytes:
    encoder = CODEC.stream_encoder("openai/gpt-5", "resp_gateway1", True)
    return b"".join(encoder.encode(e) for e in events) + encoder.close()


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_decoded_stream_accumulates_to_final_response(it: Interaction) -> None:
    events = _decode(it.sse_body)
    assert isinstance(events[0], ResponseStart)
    assert events[0].id == _final_response(it.sse_body)["id"]
    facts = _facts(_final_response(it.sse_body))
    assert _accumulated_facts(events) == facts


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_decoder_streams_every_delta(it: Interaction) -> None:
    """Deltas are passed on as they arrive, not only caught up from ``done`` events."""
    recorded = [json.loads(d) for _, d in _raw_frames(it.sse_body)]

    def count(kind: str) -> int:
        return sum(1 for p in recorded if p["type"] == kind and p["delta"])

    events = _decode(it.sse_body)
    assert sum(1 for e in events if isinstance(e, TextDelta) and e.text) == count("response.output_text.delta")
    assert sum(1 for e in events if isinstance(e, ToolCallDelta)) == count("response.function_call_arguments.delta")
    summaries = sum(1 for e in events if isinstance(e, ReasoningDelta) and e.text and e.text != "\n\n")
    assert summaries == count("response.reasoning_summary_text.delta")


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_reencoded_stream_is_valid_and_ordered(it: Interaction) -> None:
    frames = _raw_frames(_encode(_decode(it.sse_body)).decode())
    payloads = [json.loads(data) for _, data in frames]
    schemas = event_schemas()
    for (name, _), payload in zip(frames, payloads, strict=True):
        assert name == payload["type"]
        assert_valid(payload, schemas[payload["type"]])
    assert [p["sequence_number"] for p in payloads] == list(range(len(payloads)))
    kinds = [p["type"] for p in payloads]
    assert kinds[:2] == ["response.created", "response.in_progress"]
    assert kinds[-1] == "response.completed" and kinds.count("response.completed") == 1
    _assert_item_order(payloads)
    final = payloads[-1]["response"]
    assert final["id"] == "resp_gateway1" and final["model"] == "openai/gpt-5"
    # As in the real API, only reasoning's encrypted content may differ between the two (it is re-encrypted).
    done_items = [p["item"] for p in payloads if p["type"] == "response.output_item.done"]
    assert _without_encrypted(final["output"]) == _without_encrypted(done_items)


def _without_encrypted(items: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{k: v for k, v in item.items() if k != "encrypted_content"} for item in items]


def _assert_item_order(payloads: list[dict[str, Any]]) -> None:
    """Items go out one at a time: added → its own events → done, output indexes 0, 1, 2, ..."""
    current: int | None = None
    seen = -1
    for p in payloads:
        if p["type"] == "response.output_item.added":
            assert current is None and p["output_index"] == seen + 1
            current = seen = p["output_index"]
        elif p["type"] == "response.output_item.done":
            assert p["output_index"] == current
            current = None
        elif "output_index" in p:
            assert p["output_index"] == current, p["type"]
    assert current is None


_TEXT_SEQUENCE = [
    "response.output_item.added",
    "response.content_part.added",
    "response.output_text.delta",
    "response.output_text.done",
    "response.content_part.done",
    "response.output_item.done",
]


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_reencoded_stream_follows_recorded_event_grammar(it: Interaction) -> None:
    """Per message item our event kinds are the recording's (deltas collapsed), and the reasoning
    summary and function-call events appear where the recording has them."""

    def shape(payloads: list[dict[str, Any]]) -> list[str]:
        kinds: list[str] = []
        for p in payloads:
            kind = p["type"]
            if "output_index" not in p or (kinds and kinds[-1] == kind and kind.endswith(".delta")):
                continue
            kinds.append(kind)
        return kinds

    ours = [json.loads(d) for _, d in _raw_frames(_encode(_decode(it.sse_body)).decode())]
    recorded = [json.loads(d) for _, d in _raw_frames(it.sse_body)]
    hosted = {p["output_index"] for p in recorded if "web_search_call" in p["type"]} | {
        p["output_index"]
        for p in recorded
        if p["type"].startswith("response.output_item") and p["item"]["type"] == "web_search_call"
    }
    kept = [p for p in recorded if p.get("output_index") not in hosted]
    # Several summary parts become one; compare the kinds that occur, in first-occurrence order.
    assert list(dict.fromkeys(shape(ours))) == list(dict.fromkeys(shape(kept)))
    for start in (i for i, k in enumerate(shape(ours)) if k == "response.content_part.added"):
        assert shape(ours)[start - 1 : start + 5] == _TEXT_SEQUENCE


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_reencoded_stream_decodes_to_the_same_facts(it: Interaction) -> None:
    original = _facts(_final_response(it.sse_body))
    ours = _encode(_decode(it.sse_body))
    again = _accumulated_facts(_decode(ours))
    # One summary part per reasoning item after re-encoding; the joined text is unchanged.
    assert again == original
    assert _facts(_final_response(ours.decode())) == original


@pytest.mark.parametrize("it", STREAMS, ids=lambda it: it.id)
def test_usage_sniffer_reads_the_terminal_usage(it: Interaction) -> None:
    sniffer = CODEC.usage_sniffer()
    for name, data in _raw_frames(it.sse_body):
        sniffer.feed(name, data)
    usage = sniffer.usage
    raw = _final_response(it.sse_body)["usage"]
    assert usage is not None
    assert (usage.input_tokens, usage.output_tokens) == (raw["input_tokens"], raw["output_tokens"])
    assert usage.cache_read_tokens == raw["input_tokens_details"]["cached_tokens"]
    assert usage.reasoning_tokens == raw["output_tokens_details"]["reasoning_tokens"]


def test_old_recording_without_sequence_numbers_decodes() -> None:
    it = next(s for s in STREAMS if s.cassette == "test_openai_responses_stream" and s.position == 0)
    assert all("sequence_number" not in json.loads(d) for _, d in _raw_frames(it.sse_body))
    facts = _accumulated_facts(_decode(it.sse_body))
    assert facts["calls"] == [("call_kL0PCQV7M2WMoVX8V8OtYSAL", "get_capital", '{"country":"France"}')]
