"""Recorded signed thinking through a client of another protocol, and back (issue 8, defect 3).

A Responses client asks a model whose upstream speaks Messages; the recorded answer carries a signed
`thinking` block. The client keeps the reasoning item it got (as Codex does) and sends it back with its
next turn: the upstream must receive the recorded block, text and signature byte for byte.
"""

from __future__ import annotations

from typing import Any

from modelport.protocols.reasoning_carry import unwrap_anthropic
from tests.integration.conformance_gateway.replay_gateway import ReplayGateway, Slot

THINKING = Slot("r-m-thinking-turns", "anthropic_messages/test_anthropic_model_thinking_part")
SLOTS = [THINKING]


def test_signed_thinking_survives_a_responses_client_round_trip(gw: ReplayGateway) -> None:
    first, second = gw.interactions(THINKING)[:2]
    recorded = first.response_json["content"]
    question = first.request_json["messages"][0]["content"][0]["text"]
    ask: dict[str, Any] = {
        "model": THINKING.model_id,
        "input": question,
        "reasoning": {"effort": "low"},
        "max_output_tokens": 4096,
    }
    answer = gw.post("/v1/responses", ask)
    assert answer.status_code == 200, answer.text
    output = answer.json()["output"]
    reasoning = [item for item in output if item["type"] == "reasoning"]
    thinking = [block for block in recorded if block["type"] == "thinking"]
    assert len(reasoning) == len(thinking) >= 1
    carried = unwrap_anthropic(reasoning[0]["encrypted_content"])
    assert carried is not None and carried.signature == thinking[0]["signature"]
    assert reasoning[0]["summary"][0]["text"] == thinking[0]["thinking"]

    follow_up = second.request_json["messages"][-1]["content"]
    follow_up_text = follow_up if isinstance(follow_up, str) else follow_up[0]["text"]
    turn2 = {
        **ask,
        "input": [{"role": "user", "content": question}, *output, {"role": "user", "content": follow_up_text}],
    }
    gw.post("/v1/responses", turn2)  # the replay may not match our body; what was sent is what matters
    sent = gw.replay(THINKING).requests[1].json
    assistant = sent["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": thinking[0]["thinking"],
        "signature": thinking[0]["signature"],
    }
    assert sent["thinking"]["type"] == "enabled"
