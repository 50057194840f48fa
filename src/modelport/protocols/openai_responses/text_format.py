"""Responses ``text`` (``text.format`` structured output, ``text.verbosity``) ↔ canonical `ResponseFormat`."""

from __future__ import annotations

from typing import Any

from modelport.core.messages import CanonicalRequest, ResponseFormat
from modelport.core.validate import as_object, opt_bool, opt_object, opt_str, require, require_str
from modelport.errors import InvalidParameters

_FORMAT_KNOWN = ("type", "name", "schema", "strict", "description")


def decode_text(value: Any, req: CanonicalRequest) -> None:
    """Set `req.response_format` from ``text.format``; other ``text`` keys (``verbosity``) and unknown
    format keys are kept as hints."""
    if value is None:
        return
    text = as_object(value, "text")
    rest = {k: v for k, v in text.items() if k != "format"}
    if rest:
        req.extras["_text"] = rest
    fmt = opt_object(text, "format", "text.format")
    if fmt is None:
        return
    kind = require_str(fmt, "type", "text.format.type")
    extra = {k: v for k, v in fmt.items() if k not in _FORMAT_KNOWN}
    if extra:
        req.extras["_format_extras"] = extra
    if kind == "text":
        req.response_format = ResponseFormat(type="text")
    elif kind == "json_object":
        req.response_format = ResponseFormat(type="json_object")
    elif kind == "json_schema":
        req.response_format = ResponseFormat(
            type="json_schema",
            name=require_str(fmt, "name", "text.format.name", non_empty=True),
            schema=as_object(require(fmt, "schema", "text.format.schema"), "text.format.schema"),
            strict=opt_bool(fmt, "strict", "text.format.strict"),
            description=opt_str(fmt, "description", "text.format.description"),
        )
    else:
        raise InvalidParameters(
            f"Invalid value for 'text.format.type': '{kind}'. Supported values are: 'text', 'json_object' "
            "and 'json_schema'.",
            param="text.format.type",
        )


def format_to_wire(fmt: ResponseFormat) -> dict[str, Any]:
    if fmt.type != "json_schema":
        return {"type": fmt.type}
    out: dict[str, Any] = {"type": "json_schema", "name": fmt.name or "response"}
    if fmt.description is not None:
        out["description"] = fmt.description
    out["schema"] = fmt.schema if fmt.schema is not None else {"type": "object"}
    if fmt.strict is not None:
        out["strict"] = fmt.strict
    return out


def text_to_wire(req: CanonicalRequest, same: bool) -> dict[str, Any] | None:
    """The ``text`` object of a request body, or None when there is nothing to say."""
    hints = req.extras if same else {}
    out: dict[str, Any] = dict(hints.get("_text", {}))
    if req.response_format is not None:
        out["format"] = {**format_to_wire(req.response_format), **hints.get("_format_extras", {})}
    return out or None
