"""OpenTelemetry tracing in a real `modelport serve` (issue 15): spans written by the file exporter.

A client's W3C `traceparent` is continued: the request's server span is its child; admission, the upstream
call and settlement are children of the server span; the fake upstream receives a `traceparent` naming the
upstream span; a media task created with a `traceparent` is run in a span under its creating request.
"""

from __future__ import annotations

import json
import secrets
import time
from pathlib import Path
from typing import Any

import httpx

from tests.integration.gateway.conftest import CONFIG_TOML
from tests.integration.tasks.helpers import SKETCH, Team, wait_ended
from tests.support.catalogs import shipped_with_fake_chat
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import run_server

Span = dict[str, Any]


def _spans(path: Path) -> list[Span]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _wait_spans(path: Path, trace_id: str, names: set[str], timeout: float = 30) -> list[Span]:
    deadline = time.monotonic() + timeout
    while True:
        spans = [s for s in _spans(path) if s["context"]["trace_id"] == "0x" + trace_id]
        if names <= {s["name"] for s in spans} or time.monotonic() > deadline:
            assert names <= {s["name"] for s in spans}, [s["name"] for s in spans]
            return spans
        time.sleep(0.1)


def _one(spans: list[Span], name: str) -> Span:
    found = [s for s in spans if s["name"] == name]
    assert len(found) == 1, (name, [s["name"] for s in spans])
    return found[0]


def test_client_trace_continues_through_gateway_upstream_and_task_worker(tmp_path: Path) -> None:
    spans_file = tmp_path / "spans.jsonl"
    with FakeUpstream(Reply.text("hello there", usage=Usage(12, 4))) as upstream:
        (tmp_path / "catalog.toml").write_text(shipped_with_fake_chat(upstream.base_url, key_env="FAKE_UPSTREAM_KEY"))
        (tmp_path / "config.toml").write_text(CONFIG_TOML)
        with run_server(
            tmp_path,
            MODELPORT_CATALOG=str(tmp_path / "catalog.toml"),
            MODELPORT_CONFIG=str(tmp_path / "config.toml"),
            MODELPORT_DEMO_BALANCE_USD="50",
            MODELPORT_TRACING__ENABLED="true",
            MODELPORT_TRACING__EXPORTER="file",
            MODELPORT_TRACING__FILE=str(spans_file),
            FAKE_UPSTREAM_KEY="k",
        ) as server:
            auth = {"Authorization": f"Bearer {server.demo_key}"}
            chat = {"model": "fake/chat", "messages": [{"role": "user", "content": "Hi"}]}
            for stream in (False, True):
                trace_id, client_parent = secrets.token_hex(16), secrets.token_hex(8)
                headers = {**auth, "traceparent": f"00-{trace_id}-{client_parent}-01", "tracestate": "vendor=x"}
                with httpx.stream(
                    "POST",
                    server.text_url + "/v1/chat/completions",
                    json={**chat, "stream": stream},
                    headers=headers,
                    timeout=30,
                ) as r:
                    r.read()
                    assert r.status_code == 200, r.text
                sent = upstream.last_request
                assert sent is not None
                version, up_trace, up_parent, flags = sent.headers["traceparent"].split("-")
                assert (version, up_trace, flags) == ("00", trace_id, "01")
                assert sent.headers["tracestate"] == "vendor=x"

                spans = _wait_spans(
                    spans_file, trace_id, {"POST /v1/chat/completions", "admission", "upstream", "settlement"}
                )
                request = _one(spans, "POST /v1/chat/completions")
                assert request["kind"] == "SpanKind.SERVER"
                assert request["parent_id"] == "0x" + client_parent
                assert request["attributes"]["http.response.status_code"] == 200
                request_id = request["context"]["span_id"]
                for name in ("admission", "upstream", "settlement"):
                    assert _one(spans, name)["parent_id"] == request_id, name
                call = _one(spans, "upstream")
                # The upstream was told our upstream span is its parent: its spans join this trace.
                assert call["context"]["span_id"] == "0x" + up_parent
                assert call["kind"] == "SpanKind.CLIENT"
                assert call["attributes"]["gen_ai.request.model"] == "fake/chat"
                assert call["attributes"]["gen_ai.usage.input_tokens"] == 12
                assert call["attributes"]["gen_ai.usage.output_tokens"] == 4
                assert call["attributes"]["modelport.stream"] is stream
                assert _one(spans, "settlement")["attributes"]["modelport.cost_usd"] > 0

            # A request with no traceparent starts a new trace; a malformed one is ignored, not an error.
            r = httpx.post(
                server.text_url + "/v1/chat/completions",
                json=chat,
                headers={**auth, "traceparent": "00-nothex-0000-01"},
                timeout=30,
            )
            assert r.status_code == 200, r.text
            sent = upstream.last_request
            assert sent is not None and "nothex" not in sent.headers["traceparent"]

            # A media task continues the trace of the request that created it, in the worker that runs it.
            trace_id, client_parent = secrets.token_hex(16), secrets.token_hex(8)
            made = httpx.post(
                server.media_url + SKETCH,
                json={"prompt": "a traced lighthouse", "width": 256, "height": 256},
                headers={**auth, "traceparent": f"00-{trace_id}-{client_parent}-01"},
                timeout=30,
            )
            assert made.status_code == 200, made.text
            task_id = made.json()["data"]["task_id"]
            team = Team(id="", name="demo", key=str(server.demo_key))
            assert wait_ended(server.media_url, team, [task_id], timeout=90)[task_id]["status"] == "success"
            spans = _wait_spans(spans_file, trace_id, {"media task"})
            created = [s for s in spans if s["kind"] == "SpanKind.SERVER"]
            assert created[0]["name"] == "POST /{provider}/{model}", created
            assert len(created) == 1 and created[0]["parent_id"] == "0x" + client_parent, spans
            run = _one(spans, "media task")
            assert run["parent_id"] == created[0]["context"]["span_id"]
            assert run["kind"] == "SpanKind.CONSUMER"
            assert run["attributes"]["modelport.task_id"] == task_id
            assert run["status"]["status_code"] == "UNSET"
