"""Hostile inputs refused at the door of a real `modelport serve` (issue 9 items 5, 8 and 10): never a 500."""

from __future__ import annotations

import time
from typing import Any

import httpx
import orjson
import pytest

from tests.integration.gateway.conftest import Gateway

CHAT: dict[str, Any] = {"model": "fake/chat", "messages": [{"role": "user", "content": "Hi"}]}
RESPONSES: dict[str, Any] = {"model": "fake/chat", "input": "Hi"}
MESSAGES: dict[str, Any] = {"model": "fake/claude", "max_tokens": 20, "messages": [{"role": "user", "content": "Hi"}]}
ROUTES = [("/v1/chat/completions", CHAT), ("/v1/responses", RESPONSES), ("/v1/messages", MESSAGES)]


def nested() -> Any:
    return {"type": "object", "properties": {"deep": "__DEEP__"}}


def deep_body(body: dict[str, Any], depth: int) -> bytes:
    """`body` with its placeholder replaced by objects nested `depth` levels (too deep for orjson to encode)."""
    return orjson.dumps(body).replace(b'"__DEEP__"', b'{"a":' * depth + b'"x"' + b"}" * depth)


def with_tool(path: str, body: dict[str, Any], depth: int) -> dict[str, Any]:
    if path == "/v1/chat/completions":
        tool = {"type": "function", "function": {"name": "f", "parameters": nested()}}
    elif path == "/v1/responses":
        tool = {"type": "function", "name": "f", "parameters": nested()}
    else:
        tool = {"name": "f", "input_schema": nested()}
    return {**body, "tools": [tool]}


# -- item 5: JSON nested deeper than the pipeline can encode ------------------------------------------


@pytest.mark.parametrize(("path", "body"), ROUTES)
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("depth", [200, 900])
def test_deeply_nested_json_is_400_at_the_door(
    gw: Gateway, path: str, body: dict[str, Any], stream: bool, depth: int
) -> None:
    r = httpx.post(
        gw.server.text_url + path,
        content=deep_body({**with_tool(path, body, depth), "stream": stream}, depth),
        headers={"Authorization": f"Bearer {gw.key}", "content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 400, r.text
    assert "deeper than 128 levels" in r.json()["error"]["message"]
    assert gw.upstream.call_count() == 0


@pytest.mark.parametrize(("path", "body"), ROUTES)
def test_nesting_within_the_limit_is_served(gw: Gateway, path: str, body: dict[str, Any]) -> None:
    r = httpx.post(
        gw.server.text_url + path,
        content=deep_body(with_tool(path, body, 0), 100),
        headers={"Authorization": f"Bearer {gw.key}", "content-type": "application/json"},
        timeout=30,
    )
    assert r.status_code == 200, r.text


# -- item 8: huge numbers and NUL bytes --------------------------------------------------------------


def media_auth(gw: Gateway) -> dict[str, str]:
    return {"Authorization": f"Bearer {gw.key}"}


@pytest.mark.parametrize("offset", ["9223372036854775808", "1" + "0" * 5000, "1000001"])
def test_huge_list_offset_is_400(gw: Gateway, offset: str) -> None:
    r = httpx.get(gw.server.media_url + "/api/v1/media/files", params={"offset": offset}, headers=media_auth(gw))
    assert r.status_code == 400, r.text
    assert r.json()["code"] == 400 and "offset" in r.json()["message"]


def test_range_with_thousands_of_digits_is_answered(gw: Gateway) -> None:
    up = httpx.post(
        gw.server.media_url + "/api/v1/media/files",
        headers=media_auth(gw),
        files={"file": ("a.png", _png(), "image/png")},
    )
    assert up.status_code == 200, up.text
    url = up.json()["data"]["download_url"]
    huge = "9" * 5000
    past = httpx.get(url, headers={"Range": f"bytes={huge}-"})
    assert past.status_code == 416, past.text
    suffix = httpx.get(url, headers={"Range": f"bytes=-{huge}"})
    assert suffix.status_code == 206 and suffix.content == _png()
    open_end = httpx.get(url, headers={"Range": f"bytes=1-{huge}"})
    assert open_end.status_code == 206 and open_end.content == _png()[1:]


@pytest.mark.parametrize(
    "path",
    [
        "/api/v1/media/files/file_abc%00def",
        "/api/v1/media/files?limit=5%00",
        "/admin/v1/teams/t%00x",
    ],
)
def test_nul_in_path_or_query_is_400(gw: Gateway, path: str) -> None:
    headers = (
        media_auth(gw) if path.startswith("/api") else {"Authorization": "Bearer gateway-admin-token-0123456789-abcdef"}
    )
    for method in ("GET", "DELETE"):
        r = httpx.request(method, gw.server.media_url + path, headers=headers)
        assert r.status_code == 400, r.text
        assert "NUL" in r.json()["message"]


def test_nul_in_model_id_still_gets_its_log_row(gw: Gateway) -> None:
    key = gw.new_team("nul-model-team")
    r = httpx.post(
        gw.server.text_url + "/v1/chat/completions",
        json={**CHAT, "model": "fake/ch\x00at"},
        headers={"Authorization": f"Bearer {key}"},
    )
    assert r.status_code == 404, r.text
    rows: list[dict[str, Any]] = []
    for _ in range(50):
        now = int(time.time())
        rows = httpx.get(
            gw.server.text_url + "/v1/logs",
            params={"start_time": now - 3600, "end_time": now + 60},
            headers={"Authorization": f"Bearer {key}"},
        ).json()["requests"]
        if rows:
            break
        time.sleep(0.1)
    assert len(rows) == 1, rows
    assert rows[0]["status"] == "error"
    assert rows[0]["model"]["model_name"] == "ch\ufffdat"


# -- item 10: duplicate credential headers -----------------------------------------------------------


@pytest.mark.parametrize("name", ["authorization", "x-api-key"])
def test_duplicate_credential_headers_on_the_text_host_are_401(gw: Gateway, name: str) -> None:
    other = gw.new_team(f"dup-{name}")
    value = (lambda k: f"Bearer {k}") if name == "authorization" else (lambda k: k)
    for first, second in ((gw.key, other), (gw.key, gw.key)):
        headers = [(name, value(first)), (name, value(second))]
        r = httpx.post(gw.server.text_url + "/v1/chat/completions", json=CHAT, headers=headers)
        assert r.status_code == 401, r.text
        assert r.json()["error"]["message"] == f"more than one {name} header"
        models = httpx.get(gw.server.text_url + "/v1/models", headers=headers)
        assert models.status_code == 401


def test_duplicate_authorization_on_the_media_host_is_401(gw: Gateway) -> None:
    headers = [("authorization", f"Bearer {gw.key}"), ("authorization", "Bearer mp-other")]
    r = httpx.get(gw.server.media_url + "/api/v1/team/balance", headers=headers)
    assert r.status_code == 401, r.text
    admin = [("authorization", "Bearer gateway-admin-token-0123456789-abcdef")] * 2
    assert httpx.get(gw.server.media_url + "/admin/v1/teams", headers=admin).status_code == 401


def _png() -> bytes:
    from tests.unit.media.files import samples

    return samples.image_bytes()
