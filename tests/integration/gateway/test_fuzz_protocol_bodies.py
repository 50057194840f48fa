"""Structure-aware fuzzing of the three protocol POST bodies over the fast and the translated path.

Bodies are built from each protocol's real parts (roles, content blocks, tools, tool calls and results,
token caps, streaming), with wrong types, odd numbers and strings (NUL, lone surrogates escaped, huge
values), unknown and foreign fields mixed in. Whatever the body, the answer must not be a 5xx, must be
JSON in the protocol's error shape when it is an error, and a 200 stream must end with the protocol's
terminal event or its error event. The example count is bounded for CI (MODELPORT_FUZZ_EXAMPLES).
"""

from __future__ import annotations

import json
import os
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from tests.integration.gateway.conftest import Gateway

EXAMPLES = int(os.environ.get("MODELPORT_FUZZ_EXAMPLES", "15"))

# (route, model): the model's upstream speaks the route's protocol (fast) or another one (translated).
TARGETS = [
    ("/v1/chat/completions", "fake/chat"),
    ("/v1/chat/completions", "fake/claude"),
    ("/v1/responses", "fake/responses"),
    ("/v1/responses", "fake/chat"),
    ("/v1/messages", "fake/claude"),
    ("/v1/messages", "fake/responses"),
]

odd_text = st.one_of(
    st.text(max_size=40),
    st.sampled_from(["", "\x00", "a\x00b", "\u202e", "😀" * 10, "x" * 5000, "null", "{}", "[DONE]"]),
)
odd_number = st.one_of(
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=False, allow_infinity=False),
    st.sampled_from([0, 1, -1, 2**31, 2**63, 10**30, 0.5]),
)
json_leaf = st.one_of(st.none(), st.booleans(), odd_number, odd_text)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(odd_text, inner, max_size=4)),
    max_leaves=12,
)


def maybe(strategy: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Usually the real thing, sometimes any JSON value in its place."""
    return st.one_of(strategy, strategy, strategy, json_value)


schema = st.fixed_dictionaries(
    {"type": st.just("object")},
    optional={"properties": st.dictionaries(odd_text, st.fixed_dictionaries({"type": st.just("string")}), max_size=3)},
)
chat_part = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": maybe(odd_text)}),
    st.fixed_dictionaries({"type": st.just("image_url"), "image_url": maybe(st.fixed_dictionaries({"url": odd_text}))}),
    st.fixed_dictionaries({"type": odd_text}),
)
chat_tool_call = st.fixed_dictionaries(
    {
        "id": odd_text,
        "type": st.just("function"),
        "function": st.fixed_dictionaries({"name": odd_text, "arguments": maybe(odd_text)}),
    }
)
chat_message = st.one_of(
    st.fixed_dictionaries(
        {
            "role": maybe(st.sampled_from(["system", "developer", "user", "assistant"])),
            "content": maybe(st.one_of(odd_text, st.lists(chat_part, max_size=3))),
        }
    ),
    st.fixed_dictionaries(
        {"role": st.just("assistant"), "content": st.none(), "tool_calls": st.lists(chat_tool_call, max_size=2)}
    ),
    st.fixed_dictionaries({"role": st.just("tool"), "tool_call_id": odd_text, "content": maybe(odd_text)}),
)
chat_tool = st.fixed_dictionaries(
    {"type": st.just("function"), "function": st.fixed_dictionaries({"name": odd_text, "parameters": maybe(schema)})}
)

responses_item = st.one_of(
    st.fixed_dictionaries(
        {
            "role": maybe(st.sampled_from(["user", "assistant", "system", "developer"])),
            "content": maybe(
                st.one_of(
                    odd_text,
                    st.lists(
                        st.fixed_dictionaries(
                            {"type": st.sampled_from(["input_text", "output_text", "input_image"]), "text": odd_text}
                        ),
                        max_size=3,
                    ),
                )
            ),
        }
    ),
    st.fixed_dictionaries(
        {"type": st.just("function_call"), "call_id": odd_text, "name": odd_text, "arguments": maybe(odd_text)}
    ),
    st.fixed_dictionaries({"type": st.just("function_call_output"), "call_id": odd_text, "output": maybe(odd_text)}),
    st.fixed_dictionaries({"type": st.just("reasoning"), "summary": st.lists(json_value, max_size=2)}),
)
responses_tool = st.fixed_dictionaries({"type": st.just("function"), "name": odd_text, "parameters": maybe(schema)})

messages_block = st.one_of(
    st.fixed_dictionaries({"type": st.just("text"), "text": maybe(odd_text)}),
    st.fixed_dictionaries({"type": st.just("tool_use"), "id": odd_text, "name": odd_text, "input": json_value}),
    st.fixed_dictionaries(
        {
            "type": st.just("tool_result"),
            "tool_use_id": odd_text,
            "content": maybe(st.one_of(odd_text, st.lists(json_value))),
        }
    ),
    st.fixed_dictionaries({"type": st.just("thinking"), "thinking": odd_text, "signature": odd_text}),
    st.fixed_dictionaries(
        {
            "type": st.just("image"),
            "source": maybe(st.fixed_dictionaries({"type": st.just("base64"), "data": odd_text})),
        }
    ),
)
messages_message = st.fixed_dictionaries(
    {
        "role": maybe(st.sampled_from(["user", "assistant"])),
        "content": maybe(st.one_of(odd_text, st.lists(messages_block, max_size=3))),
    }
)
messages_tool = st.fixed_dictionaries({"name": odd_text, "input_schema": maybe(schema)})

extras = st.dictionaries(
    st.sampled_from(
        [
            "temperature", "top_p", "stop", "stop_sequences", "metadata", "user", "n", "seed", "tool_choice",
            "reasoning", "thinking", "response_format", "text", "store", "previous_response_id", "top_k",
            "parallel_tool_calls", "stream_options", "include", "logprobs", "service_tier", "instructions",
        ]
    ),
    json_value,
    max_size=3,
)  # fmt: skip
stream = st.one_of(st.booleans(), st.booleans(), json_value)


def bodies(route: str, model: str) -> st.SearchStrategy[dict[str, Any]]:
    if route == "/v1/chat/completions":
        fields = {"messages": maybe(st.lists(chat_message, min_size=1, max_size=4))}
        optional = {"tools": st.lists(chat_tool, max_size=2), "max_tokens": odd_number, "stream": stream}
    elif route == "/v1/responses":
        fields = {"input": maybe(st.one_of(odd_text, st.lists(responses_item, min_size=1, max_size=4)))}
        optional = {"tools": st.lists(responses_tool, max_size=2), "max_output_tokens": odd_number, "stream": stream}
    else:
        fields = {
            "messages": maybe(st.lists(messages_message, min_size=1, max_size=4)),
            "max_tokens": maybe(st.integers(min_value=1, max_value=64)),
        }
        optional = {
            "tools": st.lists(messages_tool, max_size=2),
            "system": maybe(st.one_of(odd_text, st.lists(messages_block, max_size=2))),
            "stream": stream,
        }
    return st.builds(
        lambda base, more: {**base, **more},
        st.fixed_dictionaries({"model": maybe(st.just(model)), **fields}, optional=optional),
        extras,
    )


def check_answer(route: str, response: httpx.Response, streamed: bool) -> None:
    assert response.status_code < 500, (response.status_code, response.text[:500])
    if response.status_code != 200:
        error = response.json()
        assert isinstance(error["error"]["message"], str), error
        return
    if not streamed:
        response.json()
        return
    text = response.text
    if route == "/v1/chat/completions":
        assert text.rstrip().endswith("data: [DONE]") or '"error"' in text, text[-500:]
    elif route == "/v1/responses":
        assert "event: response.completed" in text or "event: error" in text or "response.failed" in text, text[-500:]
    else:
        assert "event: message_stop" in text or "event: error" in text, text[-500:]


@pytest.mark.parametrize(("route", "model"), TARGETS)
def test_protocol_bodies_never_get_a_5xx(gw: Gateway, route: str, model: str) -> None:
    statuses: set[int] = set()

    @given(body=bodies(route, model))
    @settings(
        max_examples=EXAMPLES * 2,
        deadline=None,
        derandomize=True,
        database=None,
        suppress_health_check=list(HealthCheck),
        # No shrinking: it would cost minutes of requests in CI; the failing body is in the message.
        phases=[Phase.explicit, Phase.generate],
    )
    def run(body: dict[str, Any]) -> None:
        # The standard library encodes integers of any size (orjson stops at 64 bits).
        content = json.dumps(body).encode()
        response = httpx.post(
            gw.server.text_url + route,
            content=content,
            headers={"Authorization": f"Bearer {gw.key}", "content-type": "application/json"},
            timeout=60,
        )
        statuses.add(response.status_code)
        try:
            check_answer(route, response, body.get("stream") is True and response.status_code == 200)
        except AssertionError as exc:
            raise AssertionError(f"{exc}\nbody: {content[:3000]!r}") from None

    run()
    # Both refusals and answers were reached: the generator is not stuck on one side.
    assert 400 in statuses and 200 in statuses, statuses
