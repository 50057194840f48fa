"""OpenAPI JSON Schemas of the Chat Completions request and response bodies (see `protocols/openapi_parts.py`)."""

from __future__ import annotations

from typing import Any

from modelport.catalog_spec import OUTPUT_TOKENS_CEILING
from modelport.protocols.openapi_parts import MODEL, ROLE_MESSAGE, STREAM, USAGE

REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["model", "messages"],
    "properties": {
        "model": MODEL,
        "messages": {
            "type": "array",
            "minItems": 1,
            "items": {
                **ROLE_MESSAGE,
                "properties": {
                    "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
                    "content": {"type": ["string", "array", "null"]},
                },
            },
        },
        "stream": STREAM,
        "max_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": OUTPUT_TOKENS_CEILING},
        "max_completion_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": OUTPUT_TOKENS_CEILING},
        "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
        "tools": {"type": "array", "items": {"type": "object"}},
    },
}

RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": ["id", "object", "created", "model", "choices"],
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["chat.completion"]},
        "created": {"type": "integer"},
        "model": {"type": "string"},
        "choices": {"type": "array", "items": {"type": "object"}},
        "usage": USAGE,
    },
}
