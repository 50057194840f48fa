"""OpenAPI JSON Schemas of the Responses request and response bodies (see `protocols/openapi_parts.py`)."""

from __future__ import annotations

from typing import Any

from modelport.catalog_spec import OUTPUT_TOKENS_CEILING
from modelport.protocols.openapi_parts import MODEL, STREAM, USAGE

REQUEST: dict[str, Any] = {
    "type": "object",
    "required": ["model", "input"],
    "properties": {
        "model": MODEL,
        "input": {"type": ["string", "array"], "description": "a string, or a list of input items"},
        "instructions": {"type": ["string", "null"]},
        "stream": STREAM,
        "max_output_tokens": {"type": ["integer", "null"], "minimum": 1, "maximum": OUTPUT_TOKENS_CEILING},
        "tools": {"type": "array", "items": {"type": "object"}},
    },
}

RESPONSE: dict[str, Any] = {
    "type": "object",
    "required": ["id", "object", "created_at", "model", "status", "output"],
    "properties": {
        "id": {"type": "string"},
        "object": {"type": "string", "enum": ["response"]},
        "created_at": {"type": "integer"},
        "model": {"type": "string"},
        "status": {"type": "string"},
        "output": {"type": "array", "items": {"type": "object"}},
        "usage": USAGE,
    },
}
