"""JSON Schemas of the text gateway's bodies for its OpenAPI document.

Requests are described down to their required fields and the types of the common ones: the protocols'
own documents are the reference for the rest, and unknown fields are allowed here because each protocol
accepts more than this summary lists (fields of another protocol are refused with a 400 naming them).
Responses are described at the level of their required top-level fields, for JSON answers and for the
`text/event-stream` form a streamed request gets.
"""

from __future__ import annotations

from typing import Any

_MODEL = {"type": "string", "minLength": 1, "description": "`<provider>/<name>`, see GET /v1/models"}
_ROLE_MESSAGE = {
    "type": "object",
    "required": ["role"],
    "properties": {"role": {"type": "string"}, "content": {"type": ["string", "array", "null"]}},
}
_STREAM = {"type": "boolean", "default": False}

REQUEST_BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "type": "object",
        "required": ["model", "messages"],
        "properties": {
            "model": _MODEL,
            "messages": {
                "type": "array",
                "minItems": 1,
                "items": {
                    **_ROLE_MESSAGE,
                    "properties": {
                        "role": {"type": "string", "enum": ["system", "developer", "user", "assistant", "tool"]},
                        "content": {"type": ["string", "array", "null"]},
                    },
                },
            },
            "stream": _STREAM,
            "max_tokens": {"type": ["integer", "null"], "minimum": 1},
            "max_completion_tokens": {"type": ["integer", "null"], "minimum": 1},
            "temperature": {"type": ["number", "null"], "minimum": 0, "maximum": 2},
            "tools": {"type": "array", "items": {"type": "object"}},
        },
    },
    "/v1/responses": {
        "type": "object",
        "required": ["model", "input"],
        "properties": {
            "model": _MODEL,
            "input": {"type": ["string", "array"], "description": "a string, or a list of input items"},
            "instructions": {"type": ["string", "null"]},
            "stream": _STREAM,
            "max_output_tokens": {"type": ["integer", "null"], "minimum": 1},
            "tools": {"type": "array", "items": {"type": "object"}},
        },
    },
    "/v1/messages": {
        "type": "object",
        "required": ["model", "max_tokens", "messages"],
        "properties": {
            "model": _MODEL,
            "max_tokens": {"type": "integer", "minimum": 1},
            "messages": {
                "type": "array",
                "items": {
                    **_ROLE_MESSAGE,
                    "required": ["role", "content"],
                    "properties": {
                        "role": {"type": "string", "enum": ["user", "assistant"]},
                        "content": {"type": ["string", "array"]},
                    },
                },
            },
            "system": {"type": ["string", "array"]},
            "stream": _STREAM,
            "tools": {"type": "array", "items": {"type": "object"}},
        },
    },
}

_USAGE = {"type": ["object", "null"]}
RESPONSE_BODIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "type": "object",
        "required": ["id", "object", "created", "model", "choices"],
        "properties": {
            "id": {"type": "string"},
            "object": {"type": "string", "enum": ["chat.completion"]},
            "created": {"type": "integer"},
            "model": {"type": "string"},
            "choices": {"type": "array", "items": {"type": "object"}},
            "usage": _USAGE,
        },
    },
    "/v1/responses": {
        "type": "object",
        "required": ["id", "object", "created_at", "model", "status", "output"],
        "properties": {
            "id": {"type": "string"},
            "object": {"type": "string", "enum": ["response"]},
            "created_at": {"type": "integer"},
            "model": {"type": "string"},
            "status": {"type": "string"},
            "output": {"type": "array", "items": {"type": "object"}},
            "usage": _USAGE,
        },
    },
    "/v1/messages": {
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
    },
}

_SSE = {"type": "string", "description": "Server-sent events of the protocol (with `stream: true`)"}


def request_body(path: str) -> dict[str, Any]:
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": REQUEST_BODIES[path]}}}}


def success_response(path: str) -> dict[str, Any]:
    return {
        "description": "The answer; a stream of server-sent events when the request has `stream: true`",
        "content": {"application/json": {"schema": RESPONSE_BODIES[path]}, "text/event-stream": {"schema": _SSE}},
    }


MODEL_OBJECT = {
    "type": "object",
    "required": ["id", "object"],
    "properties": {"id": {"type": "string"}, "object": {"type": "string", "enum": ["model"]}},
}
MODEL_LIST = {
    "type": "object",
    "required": ["object", "data"],
    "properties": {"object": {"type": "string", "enum": ["list"]}, "data": {"type": "array", "items": MODEL_OBJECT}},
}
TOKEN_COUNT = {
    "type": "object",
    "required": ["input_tokens"],
    "properties": {"input_tokens": {"type": "integer", "minimum": 0}},
}
