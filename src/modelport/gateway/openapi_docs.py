"""JSON Schemas of the text gateway's bodies for its OpenAPI document. Each protocol describes its own
bodies (`ProtocolCodec.request_schema`, `response_schema`); a streamed request gets `text/event-stream`."""

from __future__ import annotations

from typing import Any

from modelport.core.codec import ProtocolCodec

_SSE = {"type": "string", "description": "Server-sent events of the protocol (with `stream: true`)"}


def request_body(codec: ProtocolCodec, **extra: Any) -> dict[str, Any]:
    schema = {**codec.request_schema, **extra}
    return {"requestBody": {"required": True, "content": {"application/json": {"schema": schema}}}}


def success_response(codec: ProtocolCodec) -> dict[str, Any]:
    return {
        "description": "The answer; a stream of server-sent events when the request has `stream: true`",
        "content": {
            "application/json": {"schema": dict(codec.response_schema)},
            "text/event-stream": {"schema": _SSE},
        },
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
