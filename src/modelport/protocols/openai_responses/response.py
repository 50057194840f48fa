"""Response object (non-stream) ↔ `CanonicalResponse`.

Each canonical part is one output item (text → ``message`` with one ``output_text``, refusal → ``message``
with one ``refusal``, tool call → ``function_call``, reasoning → ``reasoning`` with its text as one
summary). When the response came from a Responses upstream, shape hints put parts of one ``message``
item back together and keep item ids, hosted-tool items (``web_search_call``, ...) and unknown fields.
"""

from __future__ import annotations

import time
from typing import Any

from modelport.core.messages import CanonicalRequest
from modelport.core.parts import OpaquePart, OutputPart, ReasoningPart, RefusalPart, TextPart, ToolCallPart
from modelport.core.response import CanonicalResponse
from modelport.protocols.openai_common import logprob_entries
from modelport.protocols.openai_responses.echo import echo_fields
from modelport.protocols.openai_responses.input_decode import summary_texts
from modelport.protocols.openai_responses.items import (
    function_call_item,
    message_item,
    new_id,
    output_text,
    reasoning_item,
    refusal_content,
)
from modelport.protocols.openai_responses.request_decode import PROTOCOL
from modelport.protocols.openai_responses.status import status_to_wire, stop_reason_from_wire
from modelport.protocols.openai_responses.usage import usage_from_wire, usage_to_wire
from modelport.protocols.reasoning_carry import wrap_anthropic

_TOP_KNOWN = (
    "id",
    "object",
    "created_at",
    "completed_at",
    "status",
    "error",
    "incomplete_details",
    "model",
    "output",
    "output_text",
    "usage",
)
FAILED_MESSAGE = "The model failed to generate a response."


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _wire(obj: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in known}


# --- decode ---------------------------------------------------------------------------------------------


def decode_output(output: Any) -> list[OutputPart]:
    """Canonical parts of an ``output`` list; items without a canonical form (hosted-tool calls such as
    ``web_search_call``) become `OpaquePart`s. Lenient: malformed entries are skipped."""
    content: list[OutputPart] = []
    for item in output if isinstance(output, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type")
        if kind == "message":
            content.extend(_message_parts(item))
        elif kind == "function_call":
            content.append(
                ToolCallPart(
                    id=_str(item.get("call_id")),
                    name=_str(item.get("name")),
                    arguments=_str(item.get("arguments")),
                    extras={**_wire(item, ("type", "call_id", "name", "arguments", "id")), "_item_id": item.get("id")},
                )
            )
        elif kind == "reasoning":
            summary = item.get("summary") if isinstance(item.get("summary"), list) else []
            text = "\n\n".join(summary_texts(summary)) or "".join(summary_texts(item.get("content")))
            encrypted = item.get("encrypted_content")
            content.append(
                ReasoningPart(
                    text=text,
                    id=item.get("id") if isinstance(item.get("id"), str) else None,
                    encrypted_content=encrypted if isinstance(encrypted, str) else None,
                    extras={**_wire(item, ("type", "id", "encrypted_content", "summary")), "_summary": summary},
                )
            )
        elif isinstance(kind, str):
            content.append(OpaquePart(protocol=PROTOCOL, data=item))
    return content


def _message_parts(item: dict[str, Any]) -> list[OutputPart]:
    hint = {"_item_id": item.get("id"), "_item_fields": _wire(item, ("id", "type", "status", "content", "role"))}
    parts: list[OutputPart] = []
    for c in item.get("content") or []:
        if not isinstance(c, dict):
            continue
        if c.get("type") == "output_text":
            parts.append(
                TextPart(
                    text=_str(c.get("text")),
                    extras={**_wire(c, ("type", "text")), **hint},
                    logprobs=logprob_entries(c.get("logprobs")),
                )
            )
        elif c.get("type") == "refusal":
            parts.append(RefusalPart(text=_str(c.get("refusal")), extras={**_wire(c, ("type", "refusal")), **hint}))
    return parts


def decode_response(body: dict[str, Any]) -> CanonicalResponse:
    """Lenient: an upstream's answer is already paid for, so odd fields are skipped, not fatal."""
    content = decode_output(body.get("output"))
    extras: dict[str, Any] = _wire(body, _TOP_KNOWN)
    if isinstance(body.get("usage"), dict):
        extras["_usage"] = body["usage"]
    if isinstance(body.get("error"), dict):
        extras["_error"] = body["error"]
    texts = any(isinstance(p, TextPart) and p.text for p in content)
    created = body.get("created_at")
    return CanonicalResponse(
        id=_str(body.get("id")),
        model=_str(body.get("model")),
        created=int(created) if isinstance(created, int | float) else int(time.time()),
        content=content,
        stop_reason=stop_reason_from_wire(
            body.get("status"),
            body.get("incomplete_details"),
            has_tool_calls=any(isinstance(p, ToolCallPart) for p in content),
            refused=not texts and any(isinstance(p, RefusalPart) for p in content),
        ),
        usage=usage_from_wire(body.get("usage"), body.get("service_tier")),
        source_protocol=PROTOCOL,
        extras=extras,
    )


# --- encode ---------------------------------------------------------------------------------------------


def response_id(raw: str) -> str:
    """Our Response id for an upstream or gateway id (Responses ids start with ``resp_``)."""
    if raw.startswith("resp_"):
        return raw
    return f"resp_{raw}" if raw else new_id("resp")


def response_object(
    *,
    rid: str,
    model: str,
    created: int,
    status: str,
    output: list[dict[str, Any]],
    fields: dict[str, Any],
    usage: dict[str, Any] | None = None,
    incomplete_details: dict[str, Any] | None = None,
    error: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A Response object with keys in the real API's order. `fields` are the echo fields."""
    body: dict[str, Any] = {"id": rid, "object": "response", "created_at": created, "status": status}
    body["background"] = fields.get("background", False)
    if status == "completed":
        body["completed_at"] = int(time.time())
    body["error"] = error
    body["incomplete_details"] = incomplete_details
    rest = {k: v for k, v in fields.items() if k not in ("background", "metadata", "user")}
    body["instructions"] = rest.pop("instructions", None)
    body["max_output_tokens"] = rest.pop("max_output_tokens", None)
    body["max_tool_calls"] = rest.pop("max_tool_calls", None)
    body["model"] = model
    body["output"] = output
    body.update(rest)
    if usage is not None:  # the schema has no null usage; the real API's in-progress `null` is left out
        body["usage"] = usage
    if "user" in fields:
        body["user"] = fields["user"]
    body["metadata"] = fields.get("metadata", {})
    return body


def encode_output(content: list[OutputPart], status: str, *, same: bool = False) -> list[dict[str, Any]]:
    """Output items for `content`. `status` ``incomplete`` marks the last item as cut short. `same`: the
    parts came from a Responses upstream, so their hints (item ids, grouping, extra fields) apply."""
    items: list[dict[str, Any]] = []
    for part in content:
        ph = part.extras if same else {}
        item_id = ph.get("_item_id") if isinstance(ph.get("_item_id"), str) else None
        if isinstance(part, TextPart | RefusalPart):
            entry = output_text(part.text) if isinstance(part, TextPart) else refusal_content(part.text)
            if isinstance(part, TextPart) and part.logprobs:
                entry["logprobs"] = part.logprobs
            entry.update(_wire_hints(ph))
            last = items[-1] if items else None
            if item_id is not None and last is not None and last.get("type") == "message" and last["id"] == item_id:
                last["content"].append(entry)
                continue
            item = message_item(item_id or new_id("msg"), [entry], "completed")
            item.update(ph.get("_item_fields", {}))
        elif isinstance(part, ToolCallPart):
            arguments = part.arguments if part.arguments.strip() else "{}"  # never "": clients parse it as JSON
            item = function_call_item(item_id or new_id("fc"), part.id, part.name, arguments, "completed")
            item.update({k: v for k, v in _wire_hints(ph).items() if k not in item})
        elif isinstance(part, ReasoningPart):
            encrypted = part.encrypted_content or wrap_anthropic(part.text, part.signature, part.redacted)
            item = reasoning_item(part.id or new_id("rs"), part.text, encrypted)
            raw = ph.get("_summary")
            if raw is not None and "\n\n".join(summary_texts(raw)) == part.text:
                item["summary"] = raw
            item.update({k: v for k, v in _wire_hints(ph).items() if k not in item})
        elif part.protocol == PROTOCOL:
            item = dict(part.data)
        else:
            continue  # another protocol's opaque block means nothing here
        items.append(item)
    if status == "incomplete" and items and items[-1].get("type") in ("message", "function_call"):
        items[-1]["status"] = "incomplete"
    return items


def _wire_hints(extras: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in extras.items() if not k.startswith("_")}


def _drop_off_schema_nulls(fields: dict[str, Any]) -> None:
    """The real API sends ``user: null`` and ``text.format.description: null``, which its own schema
    forbids; clients treat them as absent, so they are left out."""
    if fields.get("user", "") is None:
        del fields["user"]
    text = fields.get("text")
    if isinstance(text, dict) and isinstance(text.get("format"), dict):
        text["format"] = {k: v for k, v in text["format"].items() if v is not None or k == "strict"}


def encode_response(resp: CanonicalResponse, model: str, request: CanonicalRequest | None = None) -> dict[str, Any]:
    """The Response object a Responses client receives; `model` is the name the client asked for.
    `request` (optional) is echoed in ``instructions``, ``tools``, ``temperature``, ... as the API does."""
    hints = resp.extras_for(PROTOCOL)
    status, incomplete = status_to_wire(resp.stop_reason)
    fields = echo_fields(request)
    fields.update({k: v for k, v in hints.items() if not k.startswith("_")})
    _drop_off_schema_nulls(fields)
    error = None
    if status == "failed":
        error = hints.get("_error") or {"code": "server_error", "message": FAILED_MESSAGE}
    return response_object(
        rid=response_id(resp.id),
        model=model,
        created=resp.created,
        status=status,
        output=encode_output(resp.content, status, same=resp.source_protocol == PROTOCOL),
        fields=fields,
        usage=usage_to_wire(resp.usage, hints.get("_usage")) if resp.usage is not None else None,
        incomplete_details=incomplete,
        error=error,
    )
