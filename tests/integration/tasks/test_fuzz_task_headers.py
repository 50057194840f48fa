"""Structure-aware fuzzing of every header a task creation reads (issue 33 item 5), through a real `modelport
serve`: numbers in every spelling a header can carry (`²`, `³`, `¹` pass `str.isdigit()`), signs, spaces,
huge values and odd text, in each header alone and in all of them at once. The headers are read from the
operation's OpenAPI parameters (plus `traceparent`), so a header added later is fuzzed too. Whatever the
values, the answer is not a 5xx, is in the media envelope, and the same connection answers the next
request. The team has no balance, so a creation that passes every check is a 402 and nothing runs.
MODELPORT_FUZZ_EXAMPLES bounds the example count, as in the other fuzz tests.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

import httpx
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.integration.keys.helpers import CONFIG
from tests.support.odd_numbers import header_number_like
from tests.support.server import run_server

EXAMPLES = int(os.environ.get("MODELPORT_FUZZ_EXAMPLES", "15"))
FUZZ = settings(
    max_examples=EXAMPLES, deadline=None, derandomize=True, suppress_health_check=list(HealthCheck), database=None
)
ADMIN_TOKEN = "fuzz-task-headers-admin-token-0123456789"
MODEL = "/local/sketch-image"
UNDECLARED = ["traceparent"]  # read by the route, not a documented parameter
odd_text = st.text(
    alphabet=st.characters(min_codepoint=0x21, max_codepoint=0xFF, blacklist_categories=["Cc"]), max_size=40
)
header_value = st.one_of(header_number_like, odd_text, header_number_like.map(lambda v: f"wait={v}"))


@pytest.fixture(scope="module")
def media(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[httpx.Client, list[str]]]:
    tmp = tmp_path_factory.mktemp("fuzz-task-headers")
    (tmp / "config.toml").write_text(CONFIG)  # rate limits far above what the fuzzer sends
    with run_server(tmp, MODELPORT_ADMIN_TOKEN=ADMIN_TOKEN, MODELPORT_CONFIG=str(tmp / "config.toml")) as server:
        admin = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        assert (
            httpx.post(server.media_url + "/admin/v1/teams", json={"name": "broke"}, headers=admin).status_code == 200
        )
        made = httpx.post(server.media_url + "/admin/v1/teams/broke/keys", json={}, headers=admin)
        key = made.json()["data"]["key"]
        document = httpx.get(server.media_url + "/openapi.json").json()
        operation = document["paths"]["/{provider}/{model}"]["post"]
        names = [p["name"] for p in operation["parameters"] if p["in"] == "header"] + UNDECLARED
        with httpx.Client(base_url=server.media_url, headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
            yield client, names


def check(client: httpx.Client, headers: dict[bytes, bytes]) -> None:
    answer = client.post(MODEL, json={"prompt": "a"}, headers=headers)
    assert answer.status_code in (400, 402, 409), (headers, answer.status_code, answer.text[:300])
    body = answer.json()
    assert body["code"] == answer.status_code and isinstance(body["message"], str), body
    assert client.get("/healthz").status_code == 200  # the connection is still usable


def test_every_task_header_never_gets_a_5xx(media: tuple[httpx.Client, list[str]]) -> None:
    client, names = media
    assert {"X-Task-Timeout", "X-Result-Retention", "Prefer", "Idempotency-Key", "X-Webhook-URL"} <= set(names)

    @given(values=st.lists(header_value, min_size=len(names), max_size=len(names)))
    @example(["²"] * len(names))
    @example(["wait=²"] * len(names))
    @example(["1²"] * len(names))
    @FUZZ
    def run(values: list[str]) -> None:
        encoded = [v.encode("latin-1") for v in values]
        for name, value in zip(names, encoded, strict=True):
            check(client, {name.encode(): value})
        check(client, {name.encode(): value for name, value in zip(names, encoded, strict=True)})

    run()
