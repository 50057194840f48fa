"""Conversations through a real `serve` on SQLite and PostgreSQL with the official `openai` SDK (issue 43,
item 4): `client.conversations` and its items, a conversation's items accumulating across responses on
every upstream kind (the fake checks it got the earlier turns), the log row, and team isolation."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import openai
import pytest

from tests.integration.gateway.conftest import ADMIN_TOKEN, CONFIG_TOML, Gateway, catalog_toml
from tests.support.databases import BACKENDS, migrated_postgres_database
from tests.support.fake_upstream import FakeUpstream, Reply
from tests.support.server import run_server


@contextmanager
def _database_env(backend: str) -> Iterator[dict[str, str]]:
    """The server's database: its default SQLite file, or a migrated PostgreSQL database of its own."""
    if backend == "sqlite":
        yield {}
        return
    with asyncio.Runner() as runner:
        database = migrated_postgres_database()
        url = runner.run(database.__aenter__())
        try:
            yield {"MODELPORT_DATABASE_URL": url}
        finally:
            runner.run(database.__aexit__(None, None, None))


@pytest.fixture(scope="module", params=BACKENDS)
def conv_gateway(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Gateway]:
    tmp = tmp_path_factory.mktemp(f"conversations-{request.param}")
    with FakeUpstream() as upstream, _database_env(request.param) as database:
        (tmp / "catalog.toml").write_text(catalog_toml(upstream.base_url))
        (tmp / "config.toml").write_text(CONFIG_TOML)
        with run_server(
            tmp,
            env=database,
            MODELPORT_CATALOG=str(tmp / "catalog.toml"),
            MODELPORT_CONFIG=str(tmp / "config.toml"),
            MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN,
            MODELPORT_DEMO_BALANCE_USD="50",
            FAKE_UPSTREAM_KEY="sk-upstream-secret",
        ) as server:
            assert server.demo_key is not None
            yield Gateway(server, upstream, server.demo_key)


@pytest.fixture
def gw(conv_gateway: Gateway) -> Gateway:
    conv_gateway.upstream.reset()
    return conv_gateway


def _texts(items: Any) -> list[str]:
    """Each item's text parts, joined."""
    out = []
    for item in items:
        parts = item.to_dict().get("content") or []
        out.append(" ".join(p.get("text", "") for p in parts if isinstance(p, dict)))
    return out


def _in_order(text: str, *parts: str) -> None:
    at = [text.find(p) for p in parts]
    assert all(i >= 0 for i in at), (parts, text)
    assert at == sorted(at), (parts, text)


def _message(text: str) -> Any:
    return {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}


def test_a_conversation_and_its_items(gw: Gateway) -> None:
    conversations = gw.openai.conversations
    made = conversations.create(items=[_message("one"), _message("two")], metadata={"topic": "birds"})
    assert made.id.startswith("conv_") and made.object == "conversation" and made.metadata == {"topic": "birds"}
    assert abs(made.created_at - time.time()) < 60
    assert conversations.retrieve(made.id).id == made.id
    assert conversations.update(made.id, metadata={"topic": "fish"}).metadata == {"topic": "fish"}
    assert conversations.retrieve(made.id).metadata == {"topic": "fish"}

    added = conversations.items.create(made.id, items=[_message("three")])
    assert _texts(added.data) == ["three"] and added.first_id == added.data[0].id
    newest_first = conversations.items.list(made.id)
    assert _texts(newest_first.data) == ["three", "two", "one"]
    assert [item.type for item in newest_first.data] == ["message"] * 3
    assert len({item.id for item in newest_first.data}) == 3
    page = conversations.items.list(made.id, limit=2, order="asc")
    assert _texts(page.data) == ["one", "two"] and page.has_more is True
    assert _texts(list(conversations.items.list(made.id, limit=1, order="asc"))) == ["one", "two", "three"]

    two = newest_first.data[1]
    assert two.id is not None
    assert _texts([conversations.items.retrieve(two.id, conversation_id=made.id)]) == ["two"]
    after_delete = conversations.items.delete(two.id, conversation_id=made.id)
    assert after_delete.id == made.id and after_delete.object == "conversation"
    assert _texts(conversations.items.list(made.id, order="asc").data) == ["one", "three"]
    with pytest.raises(openai.NotFoundError):
        conversations.items.retrieve(two.id, conversation_id=made.id)

    deleted = conversations.delete(made.id)
    assert (deleted.id, deleted.object, deleted.deleted) == (made.id, "conversation.deleted", True)
    with pytest.raises(openai.NotFoundError):
        conversations.retrieve(made.id)
    with pytest.raises(openai.NotFoundError):
        conversations.items.list(made.id)
    with pytest.raises(openai.NotFoundError):
        conversations.delete(made.id)

    too_many = httpx.post(
        f"{gw.server.text_url}/v1/conversations",
        json={"items": [_message(str(i)) for i in range(21)]},
        headers={"Authorization": f"Bearer {gw.key}"},
    )
    assert too_many.status_code == 400 and too_many.json()["error"]["param"] == "items"


def _logged(gw: Gateway, key: str, count: int) -> list[dict[str, Any]]:
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
def test_responses_accumulate_in_a_conversation(gw: Gateway, model: str) -> None:
    key = gw.new_team(f"conv-turns-{model.split('/')[1]}")
    client = openai.OpenAI(base_url=gw.server.text_url + "/v1", api_key=key, max_retries=0)
    conv = client.conversations.create(items=[_message("The code word is HERON.")])

    gw.upstream.push(Reply.text("Noted."))
    first = client.responses.create(model=model, conversation=conv.id, input="Remember it.")
    sent = gw.upstream.last_request
    assert sent is not None
    _in_order(json.dumps(sent.json), "The code word is HERON.", "Remember it.")
    assert "conversation" not in sent.json and conv.id not in json.dumps(sent.json)

    gw.upstream.push(Reply.text("HERON"))
    final = None
    with client.responses.create(
        model=model, conversation={"id": conv.id}, input="What was the code word?", stream=True
    ) as events:
        for event in events:
            if event.type == "response.completed":
                final = event.response
    assert final is not None and final.output_text == "HERON"
    sent = gw.upstream.last_request
    assert sent is not None
    _in_order(json.dumps(sent.json), "The code word is HERON.", "Remember it.", "Noted.", "What was the code word?")
    if model != "fake/responses":  # the gateway made these responses (a Responses upstream's own is relayed)
        assert first.conversation is not None and first.conversation.id == conv.id
        assert final.conversation is not None and final.conversation.id == conv.id

    # The seed, then each turn's input and output, oldest first.
    items = client.conversations.items.list(conv.id, order="asc").data
    assert _texts(items) == ["The code word is HERON.", "Remember it.", "Noted.", "What was the code word?", "HERON"]
    assert [item.to_dict()["role"] for item in items] == ["user", "user", "assistant", "user", "assistant"]
    # Every turn's log row names the conversation.
    rows = _logged(gw, key, 2)
    assert [row["conversation_id"] for row in rows] == [conv.id, conv.id]


def test_another_teams_conversation_is_404(gw: Gateway) -> None:
    mine = gw.openai.conversations.create(items=[_message("mine only")])
    other_key = gw.new_team("conversations-other")
    other = openai.OpenAI(base_url=gw.server.text_url + "/v1", api_key=other_key, max_retries=0)
    with pytest.raises(openai.NotFoundError):
        other.conversations.retrieve(mine.id)
    with pytest.raises(openai.NotFoundError):
        other.conversations.items.list(mine.id)
    with pytest.raises(openai.NotFoundError):
        other.conversations.items.create(mine.id, items=[_message("intruder")])
    with pytest.raises(openai.NotFoundError):
        other.conversations.delete(mine.id)
    calls = gw.upstream.call_count()
    with pytest.raises(openai.NotFoundError) as refused:
        other.responses.create(model="fake/chat", conversation=mine.id, input="and then?")
    body = refused.value.body
    assert isinstance(body, dict) and body["param"] == "conversation"
    assert gw.upstream.call_count() == calls
    assert _texts(gw.openai.conversations.items.list(mine.id).data) == ["mine only"]


def test_a_conversation_and_a_previous_response_together_are_refused(gw: Gateway) -> None:
    conv = gw.openai.conversations.create()
    first = gw.openai.responses.create(model="fake/chat", input="hi")
    with pytest.raises(openai.BadRequestError):
        gw.openai.responses.create(model="fake/chat", conversation=conv.id, previous_response_id=first.id, input="x")


def test_the_token_count_includes_the_conversations_items(gw: Gateway) -> None:
    client = gw.openai
    conv = client.conversations.create(items=[_message("word " * 800)])  # about 1000 tokens by estimate
    alone = client.responses.input_tokens.count(model="fake/chat", input="and then?")
    counted = client.responses.input_tokens.count(model="fake/chat", input="and then?", conversation=conv.id)
    assert counted.input_tokens > alone.input_tokens + 900
