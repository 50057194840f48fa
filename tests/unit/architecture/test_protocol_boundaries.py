"""Every wire protocol fact lives in its package under `modelport.protocols` (issue 22).

Beside the import-linter contracts: what a protocol package must provide (its `CODEC`, complete and
consistent with the registry and the catalog's upstream kinds), and a scan of every other module's string
literals (docstrings and comments aside) for protocol names and wire fields. A fourth protocol is then one
package plus one row in `modelport/protocols/__init__.py` (and, when it brings a new upstream kind, that
kind's name in the catalog's `UpstreamKind`, which `test_the_catalog_kinds_are_the_registry_kinds` checks).
"""

from __future__ import annotations

import ast
import dataclasses
import importlib
import re
import typing
from pathlib import Path

import pytest

from modelport import catalog_spec
from modelport.core.codec import ProtocolCodec
from modelport.errors import InvalidParameters
from modelport.protocols import CODECS, PROTOCOLS, UPSTREAM_KINDS, error_body_for_path

SRC = Path(__file__).resolve().parents[3] / "src" / "modelport"

# Protocol names and wire fields no module outside `protocols/` may spell (whole words).
WIRE_WORDS = (
    *PROTOCOLS,
    "chat.completion", "chat.completion.chunk", "content_block_delta", "content_block_start", "message_start",
    "message_delta", "message_stop", "response.output_text", "response.completed", "response.failed",
    "x-api-key", "anthropic-version", "anthropic-beta", "max_completion_tokens", "max_output_tokens",
    "max_tokens", "stream_options", "include_usage", "[DONE]",
)  # fmt: skip
_WIRE = re.compile(
    r"(?<![\w.-])(" + "|".join(re.escape(w) for w in sorted(WIRE_WORDS, key=len, reverse=True)) + r")(?![\w-])"
)

# Modules allowed to spell some of them, and why.
ALLOWED: dict[str, str] = {
    # The catalog's vocabulary of upstream kinds: two kinds are named after the protocol they speak. The
    # test below checks it against the registry.
    "catalog_spec.py": "upstream kind names",
    # The catalog's own field `max_output_tokens` (a model's maximum output), named in a warning.
    "catalog/__init__.py": "the catalog field max_output_tokens",
    # The embedded model is itself a Chat Completions server (an upstream like any HTTP one): it reads Chat
    # requests and writes Chat chunks, as an OpenAI-compatible server does.
    "upstreams/local_request.py": "the embedded model's Chat server side",
    "upstreams/local_model.py": "the embedded model's Chat server side",
    "upstreams/local_engine.py": "the embedded model's Chat server side",
    # The canonical stop reasons are named after the reasons the protocols share (`max_tokens`).
    "core/response.py": "canonical StopReason values",
}


def _docstrings(tree: ast.AST) -> set[int]:
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def wire_words_outside_protocols(root: Path) -> list[str]:
    """`path:line: word` for every string literal outside `protocols/` that spells a protocol's wire word."""
    hits: list[str] = []
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(root).as_posix()
        if rel.startswith("protocols/") or rel in ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs:
                hits += [f"{rel}:{node.lineno}: {m.group(1)}" for m in _WIRE.finditer(node.value)]
    return sorted(hits)


def test_no_protocol_fact_outside_the_protocol_packages() -> None:
    assert wire_words_outside_protocols(SRC) == []


def test_the_scan_finds_a_wire_field(tmp_path: Path) -> None:
    # The check can fail: a gateway module comparing an event name is found, a docstring saying it is not.
    (tmp_path / "gateway").mkdir()
    (tmp_path / "gateway" / "relay.py").write_text(
        '"""Relays content_block_delta events."""\n'
        'def f(event):\n    return event == "content_block_delta" or event.startswith("chat.completion.chunk")\n'
        'HEADERS = {"x-api-key": "k"}\nPROTOCOL = "openai_responses"\n'
    )
    assert wire_words_outside_protocols(tmp_path) == [
        "gateway/relay.py:3: chat.completion.chunk",
        "gateway/relay.py:3: content_block_delta",
        "gateway/relay.py:4: x-api-key",
        "gateway/relay.py:5: openai_responses",
    ]


def test_the_allow_list_names_existing_modules() -> None:
    assert all((SRC / rel).is_file() for rel in ALLOWED)


@pytest.mark.parametrize("name", PROTOCOLS)
def test_a_protocol_package_provides_a_complete_codec(name: str) -> None:
    package = importlib.import_module(f"modelport.protocols.{name}")
    codec = package.CODEC
    assert isinstance(codec, ProtocolCodec) and codec is CODECS[name] and codec.name == name
    required = [f.name for f in dataclasses.fields(ProtocolCodec) if f.default is dataclasses.MISSING]
    assert {"is_terminal", "error_body", "upstream_fault", "stream_encoder", "route"} <= set(required)
    assert all(getattr(codec, name) is not None for name in required)
    assert codec.route.path.startswith("/v1/") and codec.upstream_path.startswith("/")
    assert codec.request_schema.get("type") == "object" and codec.response_schema.get("type") == "object"
    assert codec.upstream_kinds and codec.output_cap_fields
    assert all(spec.output_cap_field in codec.output_cap_fields for spec in codec.upstream_kinds.values())
    assert all(h == h.lower() for h in codec.forwarded_headers)
    # Its error shape carries the message and the interface's error type, on its route and below it.
    error = InvalidParameters("bad", param="x")
    body = error_body_for_path(codec.route.path, error)
    assert body == codec.error_body("bad", "invalid_request_error", param="x", status=400)
    assert "bad" in str(body) and "invalid_request_error" in str(body)


def test_routes_and_ids_are_distinct() -> None:
    codecs = list(CODECS.values())
    for attr in ("path", "endpoint", "operation"):
        assert len({getattr(c.route, attr) for c in codecs}) == len(codecs), attr
    assert len({c.response_id_prefix for c in codecs}) == len(codecs)


def test_the_catalog_kinds_are_the_registry_kinds() -> None:
    assert set(typing.get_args(catalog_spec.UpstreamKind)) == set(UPSTREAM_KINDS)


def test_the_text_hosts_other_routes_answer_in_openais_shape_with_nulls() -> None:
    # One OpenAI error renderer: `param` and `code` always present (docs/api/errors.md).
    body = error_body_for_path("/v1/models", InvalidParameters("bad"))
    assert body == {"error": {"message": "bad", "type": "invalid_request_error", "param": None, "code": None}}
