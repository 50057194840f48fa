"""Both hosts' OpenAPI documents describe the responses they really send (issue 9 item 11)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from modelport.apps.media import create_media_app
from modelport.apps.text import create_text_app
from modelport.settings import Settings


def documents(tmp_path: Path) -> dict[str, dict[str, Any]]:
    settings = Settings(data_dir=tmp_path, admin_token="a" * 32)
    return {
        "media": create_media_app(settings=settings).openapi(),
        "text": create_text_app(settings=settings).openapi(),
    }


def operations(doc: dict[str, Any]) -> Iterator[tuple[str, str, dict[str, Any]]]:
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            yield method.upper(), path, op


def empty_schemas(node: Any, where: str = "") -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "schema" and value == {}:
                yield where
            yield from empty_schemas(value, f"{where}/{key}")
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from empty_schemas(value, f"{where}/{i}")


@pytest.mark.parametrize("host", ["media", "text"])
def test_no_never_sent_422_and_no_empty_schemas(tmp_path: Path, host: str) -> None:
    doc = documents(tmp_path)[host]
    assert "HTTPValidationError" not in doc["components"]["schemas"]
    for method, path, op in operations(doc):
        assert "422" not in op["responses"], (method, path)
        for status in ("400", "500"):
            schema = op["responses"][status]["content"]["application/json"]["schema"]
            assert schema == {"$ref": f"#/components/schemas/{'MediaError' if host == 'media' else 'TextError'}"}
        assert op["responses"]["200"]["content"]["application/json"]["schema"], (method, path)
    assert list(empty_schemas(doc)) == []


@pytest.mark.parametrize(
    ("path", "required"),
    [
        ("/v1/chat/completions", ["model", "messages"]),
        ("/v1/responses", ["model", "input"]),
        ("/v1/messages", ["model", "max_tokens", "messages"]),
    ],
)
def test_protocol_bodies_name_their_required_fields(tmp_path: Path, path: str, required: list[str]) -> None:
    op = documents(tmp_path)["text"]["paths"][path]["post"]
    assert op["requestBody"]["content"]["application/json"]["schema"]["required"] == required
    answers = op["responses"]["200"]["content"]
    assert "text/event-stream" in answers and "id" in answers["application/json"]["schema"]["required"]
    assert {"400", "401", "402", "404", "429", "502"} <= set(op["responses"])


def test_admin_routes_document_their_404_and_conflict(tmp_path: Path) -> None:
    doc = documents(tmp_path)["media"]
    assert {"401", "404", "409"} <= set(doc["paths"]["/admin/v1/teams"]["post"]["responses"])
