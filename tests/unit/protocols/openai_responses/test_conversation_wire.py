"""The Conversations wire shapes: the `conversation` reference, create/update/add bodies, what a turn adds."""

from __future__ import annotations

from typing import Any

import pytest

from modelport.errors import InvalidParameters
from modelport.protocols.openai_responses.conversations import (
    add_items_body,
    conversation_object,
    conversation_ref,
    create_body,
    new_item_id,
    turn_items,
    update_body,
)


def test_a_conversation_is_named_by_id_or_object_and_never_with_a_previous_response() -> None:
    assert conversation_ref({}) is None
    assert conversation_ref({"conversation": "conv_1"}) == "conv_1"
    assert conversation_ref({"conversation": {"id": "conv_1"}}) == "conv_1"
    for bad in ("", 7, {"id": 3}, {}):
        with pytest.raises(InvalidParameters) as refused:
            conversation_ref({"conversation": bad})
        assert refused.value.param == "conversation"
    with pytest.raises(InvalidParameters) as both:
        conversation_ref({"conversation": "conv_1", "previous_response_id": "resp_1"})
    assert both.value.param == "previous_response_id"


def test_bodies_are_checked_to_the_protocols_limits() -> None:
    metadata, items = create_body({"items": [{"role": "user", "content": "hi"}], "metadata": {"a": "b"}})
    assert metadata == {"a": "b"}
    assert items == [{"type": "message", "role": "user", "status": "completed",
                      "content": [{"type": "input_text", "text": "hi"}]}]  # fmt: skip
    assert create_body({}) == ({}, [])
    bad: dict[str, Any]
    for bad in ({"items": [{}] * 21}, {"items": ["text"]}, {"metadata": {str(i): "v" for i in range(17)}},
                {"metadata": {"k": 1}}, {"metadata": {"k": "v" * 513}}, {"metadata": {"k" * 65: "v"}}):  # fmt: skip
        with pytest.raises(InvalidParameters):
            create_body(bad)
    with pytest.raises(InvalidParameters):
        update_body({})
    assert update_body({"metadata": None}) == {}
    with pytest.raises(InvalidParameters):
        add_items_body({"items": []})


def test_a_turn_adds_its_input_then_its_output() -> None:
    response = {"output": [{"id": "msg_out", "type": "message", "role": "assistant", "status": "completed",
                            "content": [{"type": "output_text", "text": "yes"}]}]}  # fmt: skip
    added = turn_items([{"role": "user", "content": "q"}], response)
    assert [item.get("role") for item in added] == ["user", "assistant"]
    assert added[0]["content"] == [{"type": "input_text", "text": "q"}] and added[1]["id"] == "msg_out"
    assert new_item_id({"type": "message"}).startswith("msg_")
    assert new_item_id({"type": "function_call_output"}).startswith("item_")
    assert conversation_object("conv_1", 1_700_000_000_999, {}) == {
        "id": "conv_1", "object": "conversation", "created_at": 1_700_000_000, "metadata": {}
    }  # fmt: skip
