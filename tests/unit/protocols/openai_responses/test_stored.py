"""Responses state kept by the gateway: a request's input as items, the chain sent before a new input, the
body rewritten for it, the final response of a stream, input-item pages."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from modelport.errors import InvalidParameters, NotFound
from modelport.protocols.openai_responses.codec import CODEC
from modelport.protocols.openai_responses.listing import page
from modelport.protocols.openai_responses.stored import (
    SERVER_STATE,
    chain,
    final_response,
    input_items,
    keeps,
    output_items,
    previous_id,
    with_ids,
)
from modelport.responses_store.items import Stored, chained_items


def _user(text: str) -> dict[str, Any]:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def _answer(text: str, item_id: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def test_a_string_input_is_one_user_message_and_a_list_is_kept() -> None:
    assert input_items({"input": "hi"}) == [_user("hi")]
    items = [_user("a"), {"type": "function_call_output", "call_id": "c1", "output": "1"}]
    assert input_items({"input": items}) == items
    assert input_items({}) == []


def test_a_chain_sends_each_turns_input_then_output_oldest_first() -> None:
    first = Stored("resp_1", None, [_user("one")], {"id": "resp_1", "output": [_answer("1", "msg_a")]})
    second = Stored("resp_2", "resp_1", [_user("two")], {"id": "resp_2", "output": [_answer("2", "msg_b")]})
    earlier = chained_items([first, second], output_items)
    assert earlier == [_user("one"), _answer("1", "msg_a"), _user("two"), _answer("2", "msg_b")]
    # A response without output (failed) adds its input only.
    assert chained_items([Stored("resp_3", None, [_user("x")], {"id": "resp_3"})], output_items) == [_user("x")]
    # The body sent on: the earlier items, then the new input; no previous_response_id.
    body = {"model": "m", "input": "three", "previous_response_id": "resp_2", "store": True}
    assert chain(body, earlier) == {"model": "m", "input": [*earlier, _user("three")], "store": True}
    listed = [_user("three"), _user("four")]
    assert chain({"input": listed, "previous_response_id": "r"}, earlier) == {"input": [*earlier, *listed]}
    # An input of the wrong type is left for the decoder to refuse.
    assert chain({"input": 3, "previous_response_id": "r"}, earlier) == {"input": 3}


def test_store_defaults_to_true_and_previous_response_id_must_be_a_string() -> None:
    assert keeps({}) and keeps({"store": True}) and not keeps({"store": False})
    assert previous_id({}) is None and previous_id({"previous_response_id": "resp_1"}) == "resp_1"
    with pytest.raises(InvalidParameters) as bad:
        previous_id({"previous_response_id": 3})
    assert bad.value.param == "previous_response_id"
    unknown = SERVER_STATE.unknown_previous("resp_x")
    assert isinstance(unknown, NotFound) and unknown.param == "previous_response_id"
    assert CODEC.server_state is SERVER_STATE


def test_the_final_response_of_a_stream() -> None:
    response = {"id": "resp_1", "output": []}
    for kind in ("response.completed", "response.incomplete"):
        data = orjson.dumps({"type": kind, "response": response}).decode()
        assert final_response(kind, data) == response
        assert final_response(None, data) == response
    created = orjson.dumps({"type": "response.created", "response": response}).decode()
    assert final_response("response.created", created) is None
    assert final_response(None, created) is None
    assert final_response("response.completed", "not json") is None


def test_listed_items_get_stable_ids_and_keep_their_own() -> None:
    listed = with_ids("resp_abc", [_user("a"), _answer("b", "msg_own"), {"role": "user", "content": "c"}])
    assert [item["id"] for item in listed] == ["msg_abc_0", "msg_own", "msg_abc_2"]
    # A message is listed typed, with a status, its string content as one part.
    assert listed[2] == {**_user("c"), "id": "msg_abc_2", "status": "completed"}
    assert listed[1] == _answer("b", "msg_own")
    assert with_ids("resp_abc", [_user("a")]) == [{"id": "msg_abc_0", **_user("a"), "status": "completed"}]
    call = {"type": "function_call_output", "call_id": "c1", "output": "1"}
    assert with_ids("resp_abc", [call]) == [{"id": "msg_abc_0", **call}]


def _five() -> list[Any]:
    return with_ids("resp_x", [_user(str(i)) for i in range(5)])


def test_pages_newest_first_by_default_with_after_and_has_more() -> None:
    items = _five()
    first = page(items, limit=2, after=None, order="desc")
    assert first["object"] == "list"
    assert [d["id"] for d in first["data"]] == ["msg_x_4", "msg_x_3"]
    assert (first["first_id"], first["last_id"], first["has_more"]) == ("msg_x_4", "msg_x_3", True)
    second = page(items, limit=2, after=first["last_id"], order="desc")
    assert [d["id"] for d in second["data"]] == ["msg_x_2", "msg_x_1"]
    assert second["has_more"] is True
    last = page(items, limit=2, after=second["last_id"], order="desc")
    assert [d["id"] for d in last["data"]] == ["msg_x_0"]
    assert last["has_more"] is False


def test_pages_in_ascending_order_and_edges() -> None:
    items = _five()
    asc = page(items, limit=20, after=None, order="asc")
    assert [d["id"] for d in asc["data"]] == [f"msg_x_{i}" for i in range(5)]
    assert asc["has_more"] is False
    assert page(items, limit=5, after=None, order="asc")["has_more"] is False
    assert page(items, limit=4, after=None, order="asc")["has_more"] is True
    assert page(items, limit=3, after="msg_x_1", order="asc")["data"][0]["id"] == "msg_x_2"
    empty = page(items, limit=3, after="unknown", order="asc")
    assert empty == {"object": "list", "data": [], "first_id": None, "last_id": None, "has_more": False}
    assert page(items, limit=3, after="msg_x_4", order="asc")["data"] == []
