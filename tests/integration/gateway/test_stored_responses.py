"""Stored Responses through a real `serve` with the official `openai` SDK (issue 43, items 1-3): a chain by
`previous_response_id` reaches every upstream kind with the earlier turns (the fake checks what it got),
retrieval, input items, deletion, `store: false`, team isolation and expiry."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.integration.gateway.conftest import ADMIN_TOKEN, CONFIG_TOML, Gateway, catalog_toml
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import run_server


def _sent(gw: Gateway) -> str:
    """The last upstream request's body, as text."""
    last = gw.upstream.last_request
    assert last is not None
    return json.dumps(last.json)


def _in_order(text: str, *parts: str) -> None:
    at = [text.find(p) for p in parts]
    assert all(i >= 0 for i in at), (parts, text)
    assert at == sorted(at), (parts, text)


def _create(client: openai.OpenAI, model: str, stream: bool, **kw: Any) -> str:
    """A response's id, made with or without streaming."""
    if not stream:
        created: str = client.responses.create(model=model, **kw).id
        return created
    final = None
    with client.responses.create(model=model, stream=True, **kw) as events:
        for event in events:
            if event.type == "response.completed":
                final = event.response
    assert final is not None
    streamed: str = final.id
    return streamed


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
@pytest.mark.parametrize("model", ["fake/chat", "fake/claude", "fake/responses"])
def test_a_three_turn_chain_reaches_the_upstream(gw: Gateway, model: str, stream: bool) -> None:
    client = gw.openai
    gw.upstream.push(Reply.text("Noted: the code word is PELICAN."))
    first = _create(client, model, stream, input="Remember the code word PELICAN.")
    gw.upstream.push(Reply.text("You want it short."))
    second = _create(client, model, stream, input="Keep answers short.", previous_response_id=first)
    sent = _sent(gw)
    _in_order(sent, "Remember the code word PELICAN.", "Noted: the code word is PELICAN.", "Keep answers short.")
    assert "previous_response_id" not in sent and first not in sent
    gw.upstream.push(Reply.text("PELICAN"))
    third = client.responses.create(model=model, input="What was the code word?", previous_response_id=second)
    _in_order(
        _sent(gw),
        "Remember the code word PELICAN.",
        "Noted: the code word is PELICAN.",
        "Keep answers short.",
        "You want it short.",
        "What was the code word?",
    )
    assert third.output_text == "PELICAN"
    if model != "fake/responses":  # the gateway made this response (a Responses upstream's own is relayed)
        echoed = third.to_dict()
        assert echoed["store"] is True and echoed["previous_response_id"] == second
    # Each stored response is the one the client got; its input items are its own request's only.
    assert client.responses.retrieve(second).output_text == "You want it short."
    items = client.responses.input_items.list(third.id)
    assert len(items.data) == 1
    assert json.dumps(items.data[0].to_dict()).count("What was the code word?") == 1


def test_retrieve_list_items_and_delete(gw: Gateway) -> None:
    client = gw.openai
    gw.upstream.push(Reply.text("Three inputs seen."))
    inputs = [{"role": "user", "content": f"part {i}"} for i in range(3)]
    created = client.responses.create(model="fake/chat", input=inputs)  # type: ignore[arg-type]
    got = client.responses.retrieve(created.id)
    assert got.id == created.id and got.output_text == "Three inputs seen."

    page = client.responses.input_items.list(created.id, limit=2)  # newest first
    assert [json.dumps(d.to_dict()).count("part 2") for d in page.data] == [1, 0]
    assert page.has_more is True
    shape = httpx.get(
        f"{gw.server.text_url}/v1/responses/{created.id}/input_items?limit=2",
        headers={"Authorization": f"Bearer {gw.key}"},
    ).json()
    assert shape["object"] == "list" and shape["has_more"] is True
    assert (shape["first_id"], shape["last_id"]) == (page.data[0].id, page.data[1].id)
    rest = client.responses.input_items.list(created.id, limit=2, after=shape["last_id"])
    assert len(rest.data) == 1 and "part 0" in json.dumps(rest.data[0].to_dict()) and rest.has_more is False
    asc = client.responses.input_items.list(created.id, order="asc")
    assert ["part 0" in json.dumps(d.to_dict()) for d in asc.data] == [True, False, False]
    # The SDK follows the pages itself.
    assert len(list(client.responses.input_items.list(created.id, limit=1))) == 3
    bad = httpx.get(
        f"{gw.server.text_url}/v1/responses/{created.id}/input_items?limit=101",
        headers={"Authorization": f"Bearer {gw.key}"},
    )
    assert bad.status_code == 400

    deleted = httpx.delete(
        f"{gw.server.text_url}/v1/responses/{created.id}", headers={"Authorization": f"Bearer {gw.key}"}
    )
    assert deleted.status_code == 200
    assert deleted.json() == {"id": created.id, "object": "response.deleted", "deleted": True}
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(created.id)
    _refused_chain(gw, client, created.id)


def _refused_chain(gw: Gateway, client: openai.OpenAI, previous: str) -> None:
    """A chain from `previous` is 404 in the Responses shape, before any upstream call."""
    calls = gw.upstream.call_count()
    with pytest.raises(openai.NotFoundError) as refused:
        client.responses.create(model="fake/chat", input="and then?", previous_response_id=previous)
    body = refused.value.body
    assert isinstance(body, dict)
    assert body["type"] == "invalid_request_error" and body["param"] == "previous_response_id"
    assert gw.upstream.call_count() == calls


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "stream"])
def test_store_false_keeps_nothing(gw: Gateway, stream: bool) -> None:
    client = gw.openai
    rid = _create(client, "fake/chat", stream, input="forget me", store=False)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(rid)
    with pytest.raises(openai.NotFoundError):
        client.responses.input_items.list(rid)
    _refused_chain(gw, client, rid)


def test_another_teams_response_is_404(gw: Gateway) -> None:
    mine = gw.openai.responses.create(model="fake/chat", input="mine only").id
    other_key = gw.new_team("stored-responses-other")
    other = openai.OpenAI(base_url=gw.server.text_url + "/v1", api_key=other_key, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        other.responses.retrieve(mine)
    with pytest.raises(openai.NotFoundError):
        other.responses.input_items.list(mine)
    with pytest.raises(openai.NotFoundError):
        other.responses.delete(mine)
    _refused_chain(gw, other, mine)
    _refused_chain(gw, gw.openai, "resp_unknown")
    assert gw.openai.responses.retrieve(mine).id == mine  # untouched by the other team's delete


@pytest.fixture(scope="module")
def short_lived(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp("short-lived")
    with FakeUpstream() as upstream:
        (tmp / "catalog.toml").write_text(catalog_toml(upstream.base_url))
        (tmp / "config.toml").write_text(CONFIG_TOML)
        with run_server(
            tmp,
            MODELPORT_CATALOG=str(tmp / "catalog.toml"),
            MODELPORT_CONFIG=str(tmp / "config.toml"),
            MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN,
            MODELPORT_RESPONSES__STORE_SECONDS="2",
            FAKE_UPSTREAM_KEY="sk-upstream-secret",
        ) as server:
            assert server.demo_key is not None
            yield Gateway(server, upstream, server.demo_key)


def test_a_stored_response_expires(short_lived: Gateway, tmp_path: Path) -> None:
    client = short_lived.openai
    rid = client.responses.create(model="fake/chat", input="short-lived").id
    assert client.responses.retrieve(rid).id == rid
    time.sleep(2.5)
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(rid)
    _refused_chain(short_lived, client, rid)


def test_a_conversation_lives_from_its_last_use(short_lived: Gateway) -> None:
    client = short_lived.openai
    conv = client.conversations.create()
    time.sleep(1.3)
    client.responses.create(model="fake/chat", conversation=conv.id, input="still here")  # a use
    time.sleep(1.3)  # 2.6 s after its creation, 1.3 s after its last use: alive
    assert client.conversations.retrieve(conv.id).id == conv.id
    time.sleep(2.5)
    with pytest.raises(openai.NotFoundError):
        client.conversations.retrieve(conv.id)
    with pytest.raises(openai.NotFoundError):
        client.responses.create(model="fake/chat", conversation=conv.id, input="and now?")


@pytest.mark.parametrize("model", ["fake/chat", "fake/claude"])
def test_a_tool_call_turn_continues_by_previous_response_id(gw: Gateway, model: str) -> None:
    """The agent loop: the model calls a tool; the next request sends only the tool's output."""
    client = gw.openai
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object", "properties": {}}}
    gw.upstream.push(Reply.tool_call("get_weather", {"city": "Oslo"}, call_id="call_oslo"))
    first = client.responses.create(model=model, input="Weather in Oslo?", tools=[tool])  # type: ignore[list-item]
    calls = [item for item in first.output if item.type == "function_call"]
    assert len(calls) == 1
    gw.upstream.push(Reply.text("It is sunny in Oslo."))
    output = {"type": "function_call_output", "call_id": calls[0].call_id, "output": "sunny, 21 C"}
    second = client.responses.create(
        model=model,
        input=[output],  # type: ignore[list-item]
        tools=[tool],  # type: ignore[list-item]
        previous_response_id=first.id,
    )
    assert second.output_text == "It is sunny in Oslo."
    sent = gw.upstream.last_request
    assert sent is not None
    _in_order(json.dumps(sent.json), "Weather in Oslo?", "get_weather", "sunny, 21 C")
    messages = sent.json["messages"]
    if model == "fake/chat":
        assert [m["role"] for m in messages] == ["user", "assistant", "tool"]
        assert messages[1]["tool_calls"][0]["id"] == messages[2]["tool_call_id"]
    else:
        assert [m["role"] for m in messages] == ["user", "assistant", "user"]
        assert messages[1]["content"][-1]["type"] == "tool_use"
        assert messages[2]["content"][0]["type"] == "tool_result"


def _logged(gw: Gateway, key: str, count: int) -> list[dict[str, Any]]:
    """The team's log rows, once `count` are written (the writer batches)."""
    deadline = time.monotonic() + 15
    while True:
        now = int(time.time())
        rows: list[dict[str, Any]] = httpx.get(
            gw.server.text_url + "/v1/logs",
            params={"start_time": now - 3600, "end_time": now + 60, "page_size": 100},
            headers={"Authorization": f"Bearer {key}"},
        ).json()["requests"]
        if len(rows) >= count or time.monotonic() > deadline:
            return rows
        time.sleep(0.1)


@pytest.mark.parametrize("model", ["fake/chat", "fake/claude", "fake/responses"])
def test_the_log_row_names_the_previous_response_and_bills_the_upstreams_count(gw: Gateway, model: str) -> None:
    key = gw.new_team(f"chain-billing-{model.split('/')[1]}")
    client = openai.OpenAI(base_url=gw.server.text_url + "/v1", api_key=key, max_retries=0)
    gw.upstream.push(Reply.text("first answer", usage=Usage(input_tokens=20, output_tokens=3)))
    first = client.responses.create(model=model, input="first question")
    # The chained items are input the upstream counts: 321 tokens as it reports them, billed at 1 micro-USD each.
    gw.upstream.push(Reply.text("second answer", usage=Usage(input_tokens=321, output_tokens=7)))
    second = client.responses.create(model=model, input="second question", previous_response_id=first.id)
    assert second.usage is not None and second.usage.input_tokens == 321
    rows = _logged(gw, key, 2)
    chained = [row for row in rows if row["previous_response_id"] == first.id]
    assert len(chained) == 1, rows
    assert chained[0]["prompt_tokens"] == 321 and chained[0]["completion_tokens"] == 7
    assert chained[0]["cost"] == 321 * 1e-6 + 7 * 2e-6
    assert chained[0]["conversation_id"] is None
    assert [row["previous_response_id"] for row in rows if row is not chained[0]] == [None]


def test_the_token_count_includes_the_chained_turns(gw: Gateway) -> None:
    client = gw.openai
    gw.upstream.push(Reply.text("ok"))
    first = client.responses.create(model="fake/chat", input="word " * 800)  # about 1000 tokens by estimate
    alone = client.responses.input_tokens.count(model="fake/chat", input="and then?")
    chained = client.responses.input_tokens.count(model="fake/chat", input="and then?", previous_response_id=first.id)
    assert chained.object == "response.input_tokens"
    assert chained.input_tokens > alone.input_tokens + 900
    with pytest.raises(openai.NotFoundError):
        client.responses.input_tokens.count(model="fake/chat", input="x", previous_response_id="resp_unknown")


PAIR_MODEL = "fake/responses-pair"


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    """A server whose `fake/responses-pair` has two OpenAI Responses deployments (taken in turn)."""
    tmp = tmp_path_factory.mktemp("responses-pair")
    with FakeUpstream() as upstream:
        deployment = (
            f'kind = "openai_responses", base_url = "{upstream.base_url}/v1", api_key_env = "FAKE_UPSTREAM_KEY"'
        )
        (tmp / "catalog.toml").write_text(
            catalog_toml(upstream.base_url)
            + f"""
[[text_models]]
id = "{PAIR_MODEL}"
prices = {{ input = "1", output = "2" }}
deployments = [
  {{ name = "a", model = "up-a", {deployment} }},
  {{ name = "b", model = "up-b", {deployment} }},
]
"""
        )
        (tmp / "config.toml").write_text(CONFIG_TOML)
        with run_server(
            tmp,
            MODELPORT_CATALOG=str(tmp / "catalog.toml"),
            MODELPORT_CONFIG=str(tmp / "config.toml"),
            MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN,
            FAKE_UPSTREAM_KEY="sk-upstream-secret",
        ) as server:
            assert server.demo_key is not None
            yield Gateway(server, upstream, server.demo_key)


def test_a_chain_moves_between_two_responses_deployments(pair: Gateway) -> None:
    """Each turn may land on the other deployment (or account): it gets every earlier item, never an id
    only the first one knows."""
    client = pair.openai
    turns = [
        ("Remember the code word OSPREY.", "Noted: OSPREY."),
        ("Keep answers short.", "Short it is."),
        ("What was the code word?", "OSPREY"),
    ]
    previous: str | None = None
    served = []
    for n, (question, answer) in enumerate(turns):
        pair.upstream.push(Reply.text(answer))
        extra: dict[str, Any] = {} if previous is None else {"previous_response_id": previous}
        made = client.responses.create(model=PAIR_MODEL, input=question, **extra)
        sent = pair.upstream.last_request
        assert sent is not None
        served.append(sent.json["model"])
        assert "previous_response_id" not in sent.json
        _in_order(json.dumps(sent.json), *(text for turn in turns[:n] for text in turn), question)
        previous = made.id
    assert set(served) == {"up-a", "up-b"}, served
    assert previous is not None
    assert client.responses.retrieve(previous).output_text == "OSPREY"


@pytest.mark.local_model
@pytest.mark.heavy
def test_a_chain_reaches_the_embedded_model(gw: Gateway) -> None:
    """The embedded model reads the earlier turns: the second and third turns' prompts (as its own tokenizer
    counts them, the same count `input_tokens` gives) hold the first turn's long input, and the third's holds
    the second turn too (the chain is three turns long, as for the other upstream kinds)."""
    client = gw.openai
    model = "local/smollm2-135m-instruct"
    first = client.responses.create(model=model, input="The code word is PELICAN. " * 20, max_output_tokens=16)
    alone = client.responses.input_tokens.count(model=model, input="What was the code word?")
    counted = client.responses.input_tokens.count(
        model=model, input="What was the code word?", previous_response_id=first.id
    )
    second = client.responses.create(
        model=model, input="What was the code word?", previous_response_id=first.id, max_output_tokens=16
    )
    assert first.usage is not None and second.usage is not None
    assert getattr(alone, "estimated", None) is None and getattr(counted, "estimated", None) is None
    assert counted.input_tokens == second.usage.input_tokens
    # The first turn's input is 20 x 7 tokens or so: all of it is in the second prompt.
    assert second.usage.input_tokens >= alone.input_tokens + 100, (alone, second.usage)
    assert client.responses.retrieve(second.id).previous_response_id == first.id

    third = client.responses.create(
        model=model, input="Say it once more.", previous_response_id=second.id, max_output_tokens=16
    )
    assert third.usage is not None
    third_alone = client.responses.input_tokens.count(model=model, input="Say it once more.")
    # Both earlier turns are in the third prompt: the first's long input, the second's question and answer.
    assert third.usage.input_tokens >= third_alone.input_tokens + 100, (third_alone, third.usage)
    assert third.usage.input_tokens > second.usage.input_tokens, (second.usage, third.usage)
    assert client.responses.retrieve(third.id).previous_response_id == second.id
