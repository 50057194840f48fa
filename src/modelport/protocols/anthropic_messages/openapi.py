"""OpenAPI JSON Schemas of the Messages request and response bodies (see `protocols/openapi_parts.py`)."""

from __future__ import annotations

from typing import Any

from modelport.catalog_spec import OUTPUT_TOKENS_CEILING
from modelport.protocols.openapi_parts import MODEL, ROLE_MESSAGE, STREAM

REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["model", "max_tokens", "messages"],
    "properties": {
        "model": MODEL,
        "max_tokens": {"type": "integer", "minimum": 1, "maximum": OUTPUT_TOKENS_CEILING},
        "messages": {
            "type": "array",
            "items": {
                **ROLE_MESSAGE,
                "required": ["role", "content"],
                "properties": {
                    "role": {"type": "string", "enum": ["user", "assistant"]},
                    "content": {"type": ["string", "array"]},
                },
            },
        },
        "system": {"type": ["string", "array"]},
        "stream": STREAM,
        "tools": {"type": "array", "items": {"type": "object"}},
    },
}

RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": ["id", "type", "role", "model", "content", "stop_reason", "usage"],
    "properties": {
        "id": {"type": "string"},
        "type": {"type": "string", "enum": ["message"]},
        "role": {"type": "string", "enum": ["assistant"]},
        "model": {"type": "string"},
        "content": {"type": "array", "items": {"type": "object"}},
        "stop_reason": {"type": ["string", "null"]},
        "usage": {"type": "object"},
    },
}
