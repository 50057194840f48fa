"""Items of stored Responses: a request's input as items, the chain sent before a new input, pages."""

from __future__ import annotations

from typing import Any

from modelport.responses_store.items import Stored, chained_items, input_items, page, with_ids


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
    assert input_items("hi") == [_user("hi")]
    items = [_user("a"), {"type": "function_call_output", "call_id": "c1", "output": "1"}]
    assert input_items(items) == items
    assert input_items(None) == []


def test_a_chain_sends_each_turns_input_then_output_oldest_first() -> None:
    first = Stored("resp_1", None, [_user("one")], {"id": "resp_1", "output": [_answer("1", "msg_a")]})
    second = Stored("resp_2", "resp_1", [_user("two")], {"id": "resp_2", "output": [_answer("2", "msg_b")]})
    assert chained_items([first, second]) == [_user("one"), _answer("1", "msg_a"), _user("two"), _answer("2", "msg_b")]
    # A response without output (failed) adds its input only.
    assert chained_items([Stored("resp_3", None, [_user("x")], {"id": "resp_3"})]) == [_user("x")]


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
