"""Pieces of the OpenAPI JSON Schemas the protocol packages describe their bodies with (`openapi.py` in each).

Requests are described down to their required fields and the types of the common ones: the protocols'
own documents are the reference for the rest, and unknown fields are allowed because each protocol accepts
more than this summary lists (fields of another protocol are refused with a 400 naming them). Responses are
described at the level of their required top-level fields.
"""

from __future__ import annotations

from typing import Any

MODEL: dict[str, Any] = {"type": "string", "minLength": 1, "description": "`<provider>/<name>`, see GET /v1/models"}
ROLE_MESSAGE: dict[str, Any] = {
    "type": "object",
    "required": ["role"],
    "properties": {"role": {"type": "string"}, "content": {"type": ["string", "array", "null"]}},
}
STREAM: dict[str, Any] = {"type": "boolean", "default": False}
USAGE: dict[str, Any] = {"type": ["object", "null"]}
