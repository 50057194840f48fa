"""Cache writes by lifetime and the reported service tier, read from each protocol's usage: Anthropic bodies
and streams (`message_start`, then the cumulative `message_delta`), the fast-path sniffers and the
translated stream decoders; and the breakdown written back to Messages clients."""

from __future__ import annotations

import json

from modelport.core.events import UsageUpdate
from modelport.core.usage import Usage
from modelport.protocols.anthropic_messages.stream_decode import MessagesStreamDecoder
from modelport.protocols.anthropic_messages.usage import MessagesUsageSniffer, usage_from_body, usage_to_wire
from modelport.protocols.openai_chat.stream_decode import ChatStreamDecoder
from modelport.protocols.openai_chat.usage import ChatUsageSniffer
from modelport.protocols.openai_chat.usage import usage_from_body as chat_usage_from_body
from modelport.protocols.openai_responses.usage import ResponsesUsageSniffer
from modelport.protocols.openai_responses.usage import usage_from_body as responses_usage_from_body
from tests.support.cassettes import sse_file

START = {
    "type": "message_start",
    "message": {
        "usage": {
            "input_tokens": 50,
            "cache_creation_input_tokens": 4000,
            "cache_read_input_tokens": 10_000,
            "cache_creation": {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 3000},
            "output_tokens": 1,
            "service_tier": "priority",
            "inference_geo": "not_available",
        }
    },
}
# Recorded shape: the cumulative counts again, without the breakdown or the tier.
DELTA = {
    "type": "message_delta",
    "delta": {"stop_reason": "end_turn", "stop_sequence": None},
    "usage": {
        "input_tokens": 50,
        "cache_creation_input_tokens": 4000,
        "cache_read_input_tokens": 10_000,
        "output_tokens": 800,
    },
}
EXPECTED = Usage(
    input_tokens=14_050,
    cache_read_tokens=10_000,
    cache_write_tokens=4000,
    cache_write_1h_tokens=3000,
    output_tokens=800,
    service_tier="priority",
)


def test_a_messages_body_gives_the_one_hour_share_and_the_tier() -> None:
    body = {"usage": {**START["message"]["usage"], "output_tokens": 800}}  # type: ignore[index]
    assert usage_from_body(body) == EXPECTED


def test_no_breakdown_means_every_write_is_a_five_minute_one() -> None:
    usage = usage_from_body({"usage": {"input_tokens": 3, "cache_creation_input_tokens": 418, "output_tokens": 5}})
    assert usage is not None
    assert (usage.cache_write_tokens, usage.cache_write_1h_tokens, usage.cache_write_5m_tokens) == (418, 0, 418)
    assert usage.service_tier is None


def test_a_breakdown_larger_than_its_total_is_billed_as_its_sum() -> None:
    raw = {"input_tokens": 0, "cache_creation": {"ephemeral_5m_input_tokens": 10, "ephemeral_1h_input_tokens": 20}}
    usage = usage_from_body({"usage": raw})
    assert usage is not None and (usage.cache_write_tokens, usage.cache_write_1h_tokens) == (30, 20)


def test_streams_keep_the_breakdown_of_message_start_through_the_cumulative_delta() -> None:
    sniffer = MessagesUsageSniffer()
    decoder = MessagesStreamDecoder()
    updates: list[Usage] = []
    for event in (START, DELTA):
        sniffer.feed(str(event["type"]), json.dumps(event))
        updates += [e.usage for e in decoder.feed(str(event["type"]), json.dumps(event)) if isinstance(e, UsageUpdate)]
    assert sniffer.usage == EXPECTED
    assert updates[-1] == EXPECTED


def test_a_later_breakdown_replaces_the_earlier_one() -> None:
    sniffer = MessagesUsageSniffer()
    sniffer.feed("message_start", json.dumps(START))
    later = {**DELTA, "usage": {**DELTA["usage"], "cache_creation": {"ephemeral_1h_input_tokens": 4000}}}  # type: ignore[dict-item]
    sniffer.feed("message_delta", json.dumps(later))
    assert sniffer.usage is not None and sniffer.usage.cache_write_1h_tokens == 4000


def test_the_recorded_stream_reads_as_standard_with_no_writes() -> None:
    sniffer = MessagesUsageSniffer()
    for block in sse_file("extracted", "anthropic_messages.stream_text.sse").split("\n\n"):
        lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        if "data" in lines:
            sniffer.feed(lines.get("event"), lines["data"])
    assert sniffer.usage == Usage(input_tokens=20, output_tokens=5, service_tier="standard")


def test_messages_clients_get_the_breakdown_in_the_recorded_key_order() -> None:
    wire = usage_to_wire(EXPECTED)
    assert list(wire) == [
        "input_tokens",
        "cache_creation_input_tokens",
        "cache_read_input_tokens",
        "cache_creation",
        "output_tokens",
    ]
    assert wire["cache_creation"] == {"ephemeral_5m_input_tokens": 1000, "ephemeral_1h_input_tokens": 3000}
    assert wire["input_tokens"] == 50


def test_openai_protocols_report_the_tier_beside_usage() -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 2}
    chunk = {"choices": [], "usage": usage, "service_tier": "priority"}
    assert chat_usage_from_body(chunk) == Usage(input_tokens=10, output_tokens=2, service_tier="priority")
    sniffer = ChatUsageSniffer()
    sniffer.feed(None, json.dumps(chunk))
    assert sniffer.usage is not None and sniffer.usage.service_tier == "priority"
    decoded = [
        e for e in ChatStreamDecoder().feed(None, json.dumps({"id": "c", **chunk})) if isinstance(e, UsageUpdate)
    ]
    assert decoded[0].usage.service_tier == "priority"
    response = {"usage": {"input_tokens": 10, "output_tokens": 2}, "service_tier": "flex"}
    assert responses_usage_from_body(response) == Usage(input_tokens=10, output_tokens=2, service_tier="flex")
    rsniffer = ResponsesUsageSniffer()
    rsniffer.feed("response.completed", json.dumps({"type": "response.completed", "response": response}))
    assert rsniffer.usage is not None and rsniffer.usage.service_tier == "flex"
    # A tier that is not a string (or is empty) is unknown.
    assert chat_usage_from_body({"usage": usage, "service_tier": 7}) == Usage(input_tokens=10, output_tokens=2)
