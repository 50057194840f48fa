"""The embedded SmolLM2 model for real, through all three protocols with the official SDKs.

A fresh install (default catalog, no MODELPORT_CATALOG) must answer `local/smollm2-135m-instruct` with real
text and real token counts, streaming and not, honour the output cap with the protocol's own "cut short"
signal, and list the model for both SDKs' `models.list()`.
"""

from __future__ import annotations

from collections.abc import Iterator

import anthropic
import openai
import pytest

from tests.support.server import RunningServer, run_server

pytestmark = pytest.mark.local_model

MODEL = "local/smollm2-135m-instruct"
PROMPT = "Write a long story about a dragon who learns to cook."
CAP = 24  # enough for some text, small enough to keep the module quick on two cores
TINY = 3


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    # run_server drops every MODELPORT_* variable of the caller: the default catalog is used.
    with run_server(tmp_path_factory.mktemp("local-model"), MODELPORT_DEMO_BALANCE_USD="100") as running:
        assert running.demo_key is not None
        yield running


@pytest.fixture(scope="module")
def oai(server: RunningServer) -> openai.OpenAI:
    assert server.demo_key is not None
    return openai.OpenAI(base_url=server.text_url + "/v1", api_key=server.demo_key, max_retries=0, timeout=120)


@pytest.fixture(scope="module")
def claude(server: RunningServer) -> anthropic.Anthropic:
    assert server.demo_key is not None
    return anthropic.Anthropic(base_url=server.text_url, api_key=server.demo_key, max_retries=0, timeout=120)


def test_models_list_for_both_sdks(oai: openai.OpenAI, claude: anthropic.Anthropic) -> None:
    assert MODEL in [m.id for m in oai.models.list()]
    listed = list(claude.models.list())
    assert MODEL in [m.id for m in listed]
    assert all(m.type == "model" and m.display_name for m in listed)


# ---------------------------------------------------------------- Chat Completions


def test_chat(oai: openai.OpenAI) -> None:
    r = oai.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": PROMPT}], max_tokens=CAP)
    assert r.choices[0].message.content and r.choices[0].message.content.strip()
    assert r.usage is not None and r.usage.prompt_tokens > 0 and 0 < r.usage.completion_tokens <= CAP
    assert r.choices[0].finish_reason in ("stop", "length")


def test_chat_stream(oai: openai.OpenAI) -> None:
    text, usage, finish, deltas = "", None, None, 0
    with oai.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": PROMPT}],
        max_tokens=CAP,
        stream=True,
        stream_options={"include_usage": True},
    ) as stream:
        for chunk in stream:
            usage = chunk.usage or usage
            for choice in chunk.choices:
                if choice.delta.content:
                    text, deltas = text + choice.delta.content, deltas + 1
                finish = choice.finish_reason or finish
    assert text.strip() and deltas > 1, "real token streaming: several content deltas"
    assert usage is not None and usage.prompt_tokens > 0 and 0 < usage.completion_tokens <= CAP
    assert finish in ("stop", "length")


def test_chat_tiny_cap_is_length(oai: openai.OpenAI) -> None:
    r = oai.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": PROMPT}], max_tokens=TINY)
    assert r.choices[0].finish_reason == "length"
    assert r.usage is not None and r.usage.completion_tokens == TINY


# ---------------------------------------------------------------- Responses


def test_responses(oai: openai.OpenAI) -> None:
    r = oai.responses.create(model=MODEL, input=PROMPT, max_output_tokens=CAP)
    assert r.output_text.strip()
    assert r.usage is not None and r.usage.input_tokens > 0 and 0 < r.usage.output_tokens <= CAP


def test_responses_stream_cut_by_cap_is_incomplete(oai: openai.OpenAI) -> None:
    # 16 is the smallest cap the Responses API accepts; the story prompt runs longer. (The SDK's
    # `responses.stream()` helper only finishes on `response.completed`, so read the raw events.)
    deltas, kinds = [], []
    with oai.responses.create(model=MODEL, input=PROMPT, max_output_tokens=16, stream=True) as stream:
        for event in stream:
            kinds.append(event.type)
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
            if event.type == "response.incomplete":
                final = event.response
    assert kinds[0] == "response.created" and kinds[-1] == "response.incomplete", kinds
    assert len(deltas) > 1 and "".join(deltas).strip()
    assert final.status == "incomplete"
    assert final.incomplete_details is not None and final.incomplete_details.reason == "max_output_tokens"
    assert final.usage is not None and final.usage.input_tokens > 0 and final.usage.output_tokens == 16


# ---------------------------------------------------------------- Messages


def test_messages(claude: anthropic.Anthropic) -> None:
    m = claude.messages.create(model=MODEL, max_tokens=CAP, messages=[{"role": "user", "content": PROMPT}])
    text = "".join(b.text for b in m.content if b.type == "text")
    assert text.strip()
    assert m.usage.input_tokens > 0 and 0 < m.usage.output_tokens <= CAP
    assert m.stop_reason in ("end_turn", "max_tokens")


def test_messages_stream_tiny_cap_is_max_tokens(claude: anthropic.Anthropic) -> None:
    with claude.messages.stream(model=MODEL, max_tokens=TINY, messages=[{"role": "user", "content": PROMPT}]) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text.strip()
    assert final.stop_reason == "max_tokens"
    assert final.usage.input_tokens > 0 and final.usage.output_tokens == TINY
