"""Each host's OpenAPI document as its responses really are.

FastAPI documents a 422 for every route with parameters (our handlers turn validation errors into 400)
and an empty schema for routes that return a raw `Response`. This module rewrites the generated document
once: the 422s and their components go; every operation lists the errors it can answer, each with the
host's error shape; a success without a schema gets the host's success shape (the media envelope, or the
schema the route declared through `responses`).

Which errors: 400 (bad parameters or body, a NUL in the path), 401 (unless the route is public), 404
(routes with path parameters, and the admin API, which is a 404 without an admin token), 500 and 503 for
every operation, plus what the composition layer names per operation (`extra_errors`, e.g. 402, 409,
413, 429). The connection-level 408, 431 and 503 of `http_protocol` are described in docs/api/errors.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from modelport.web.errors import Host

ERROR_DESCRIPTIONS = {
    400: "Invalid parameters",
    401: "Missing or invalid credentials",
    402: "Insufficient balance",
    404: "Not found",
    405: "Method not allowed",
    409: "Conflict",
    413: "Payload too large or quota exceeded",
    416: "Range not satisfiable",
    429: "Rate limit, request limit or temporarily unavailable",
    500: "Internal server error",
    502: "Upstream error",
    503: "Service unavailable",
}

MEDIA_ERROR = {
    "type": "object",
    "required": ["code", "message"],
    "properties": {
        "code": {"type": "integer", "description": "the HTTP status"},
        "message": {"type": "string", "description": "`Category: detail`"},
    },
}
TEXT_ERROR = {
    "type": "object",
    "required": ["error"],
    "properties": {
        "error": {
            "type": "object",
            "required": ["message", "type"],
            "properties": {
                "message": {"type": "string"},
                "type": {"type": "string"},
                "code": {"type": ["string", "null"]},
                "param": {"type": ["string", "null"]},
            },
        }
    },
}
MEDIA_ENVELOPE = {
    "type": "object",
    "required": ["code", "message", "data"],
    "properties": {
        "code": {"type": "integer", "enum": [0]},
        "message": {"type": "string"},
        "data": {"type": ["object", "array", "null"], "description": "the operation's result"},
    },
}

_PATH_PARAM = re.compile(r"\{[^}]+\}")


def install_openapi(
    app: FastAPI,
    host: Host,
    *,
    public: frozenset[str] = frozenset(),
    extra_errors: Callable[[str, str], tuple[int, ...]] = lambda _method, _path: (),
) -> None:
    """Replace `app.openapi` with the rewritten document (built once, on first use)."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            doc = get_openapi(title=app.title, version=app.version, routes=app.routes)
            app.openapi_schema = rewrite(doc, host, public=public, extra_errors=extra_errors)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def rewrite(
    doc: dict[str, Any],
    host: Host,
    *,
    public: frozenset[str],
    extra_errors: Callable[[str, str], tuple[int, ...]],
) -> dict[str, Any]:
    components = doc.setdefault("components", {}).setdefault("schemas", {})
    components.pop("HTTPValidationError", None)
    components.pop("ValidationError", None)
    error_name = "MediaError" if host == "media" else "TextError"
    components[error_name] = MEDIA_ERROR if host == "media" else TEXT_ERROR
    if host == "media":
        components["MediaEnvelope"] = MEDIA_ENVELOPE
    error_ref = {"$ref": f"#/components/schemas/{error_name}"}
    for path, operations in doc.get("paths", {}).items():
        for method, operation in operations.items():
            responses: dict[str, Any] = operation.setdefault("responses", {})
            responses.pop("422", None)
            statuses = {400, 500, 503, *extra_errors(method.upper(), path)}
            if path not in public:
                statuses.add(401)
            if _PATH_PARAM.search(path) or path.startswith("/admin/"):
                statuses.add(404)
            for status in sorted(statuses):
                entry = responses.setdefault(str(status), {"description": ERROR_DESCRIPTIONS.get(status, "Error")})
                entry.setdefault("content", {"application/json": {"schema": error_ref}})
            _fill_success(responses, host)
    return doc


def _fill_success(responses: dict[str, Any], host: Host) -> None:
    success = responses.get("200")
    if success is None:
        return
    content = success.setdefault("content", {})
    json_body = content.setdefault("application/json", {})
    if not json_body.get("schema"):
        if host == "media":
            json_body["schema"] = {"$ref": "#/components/schemas/MediaEnvelope"}
        else:
            json_body["schema"] = {"type": "object"}
