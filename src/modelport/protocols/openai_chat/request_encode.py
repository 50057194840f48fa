"""`CanonicalRequest` → Chat Completions request body for an upstream.

When the request came from a Chat client (``source_protocol == "openai_chat"``) its extras and shape
hints are honoured, so the body matches what the client sent (apart from `model`). From other protocols:
system parts become one leading ``system`` message; tool results become ``tool`` messages (images from
tool results follow in a ``user`` message, since Chat tool messages carry text only); reasoning parts are
dropped (Chat has no reasoning input).
"""

from __future__ import annotations

from typing import Any

from modelport.core.messages import CanonicalRequest, Message, ResponseFormat, ToolChoice, ToolSpec
from modelport.core.parts import (
    AudioPart,
    FilePart,
    ImagePart,
    InputPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from modelport.protocols.openai_common import carry_to_chat
from modelport.protocols.openai_effort import effort_from_budget
from modelport.protocols.responses_tools_carry import carried_tools

PROTOCOL = "openai_chat"


def _wire(extras: dict[str, Any]) -> dict[str, Any]:
    """The wire fields among `extras` (shape hints start with ``_``)."""
    return {k: v for k, v in extras.items() if not k.startswith("_")}


def _sub(extras: dict[str, Any], prefix: str) -> dict[str, Any]:
    """Hinted sub-object fields, stored as ``_<prefix>.<key>``."""
    start = f"_{prefix}."
    return {k[len(start) :]: v for k, v in extras.items() if k.startswith(start)}


def encode_request(
    req: CanonicalRequest, upstream_model: str, *, max_tokens_field: str = "max_completion_tokens"
) -> dict[str, Any]:
    """The upstream body. `max_tokens_field` lets OpenAI-compatible servers that only know the older
    ``max_tokens`` ask for it; a Chat client's own choice wins."""
    same = req.source_protocol == PROTOCOL
    hints = req.extras if same else {}
    body: dict[str, Any] = _wire(hints)
    body["model"] = upstream_model
    body["messages"] = _encode_system(req.system, same) + _encode_messages(req.messages, same)

    if req.max_output_tokens is not None:
        body[hints.get("_max_tokens_field", max_tokens_field)] = req.max_output_tokens
    _put(body, "temperature", req.temperature)
    _put(body, "top_p", req.top_p)
    _put(body, "n", req.n)
    if req.stop:
        body["stop"] = req.stop[0] if hints.get("_stop_string") and len(req.stop) == 1 else list(req.stop)
    body["stream"] = req.stream
    _encode_stream_options(req, body)
    if req.reasoning is not None:
        effort = req.reasoning.effort or effort_from_budget(req.reasoning.budget_tokens)
        if req.reasoning.enabled and effort is None:
            effort = "medium"  # thinking on without a budget (Anthropic `adaptive`)
        if not req.reasoning.enabled and req.reasoning.effort is None:
            effort = None
        _put(body, "reasoning_effort", effort)
    if req.response_format is not None:
        body["response_format"] = _encode_response_format(req.response_format, hints)
    _put(body, "user", req.user)
    if req.metadata is not None:
        body["metadata"] = dict(req.metadata)

    own = [*req.tools, *carried_tools(req, PROTOCOL)]
    tools = [_encode_tool(t, same) for t in own] + list(hints.get("_other_tools", []))
    if tools:
        body["tools"] = tools
    if "_tool_choice_raw" in hints:
        body["tool_choice"] = hints["_tool_choice_raw"]
    elif req.tool_choice is not None:
        body["tool_choice"] = _encode_tool_choice(req.tool_choice)
    _put(body, "parallel_tool_calls", req.parallel_tool_calls)
    carry_to_chat(req, body)
    return body


def _put(body: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


def _encode_stream_options(req: CanonicalRequest, body: dict[str, Any]) -> None:
    options: dict[str, Any] = dict(body.pop("stream_options", None) or {})
    if req.stream and req.include_usage:
        options["include_usage"] = True
    elif "include_usage" in options:
        options["include_usage"] = req.include_usage
    if options and req.stream:
        body["stream_options"] = options


def _encode_response_format(fmt: ResponseFormat, hints: dict[str, Any]) -> dict[str, Any]:
    if fmt.type != "json_schema":
        return {"type": fmt.type}
    spec: dict[str, Any] = {"name": fmt.name or "response"}
    if fmt.description is not None:
        spec["description"] = fmt.description
    if fmt.schema is not None or hints.get("_schema_null"):
        spec["schema"] = fmt.schema
    if fmt.strict is not None:
        spec["strict"] = fmt.strict
    return {"type": "json_schema", "json_schema": spec}


def _encode_tool(tool: ToolSpec, same: bool) -> dict[str, Any]:
    fn: dict[str, Any] = dict(tool.extras) if same else {}
    fn["name"] = tool.name
    if tool.description is not None:
        fn["description"] = tool.description
    if tool.parameters is not None:
        fn["parameters"] = tool.parameters
    if tool.strict is not None:
        fn["strict"] = tool.strict
    return {"type": "function", "function": fn}


def _encode_tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if choice.mode == "named":
        return {"type": "function", "function": {"name": choice.name or ""}}
    return choice.mode


# --- messages -------------------------------------------------------------------------------------------


def _encode_system(parts: list[TextPart], same: bool) -> list[dict[str, Any]]:
    if not parts:
        return []
    if not same:
        return [{"role": "system", "content": parts[0].text if len(parts) == 1 else [_text(p, False) for p in parts]}]
    messages: list[dict[str, Any]] = []
    group: object = object()
    for part in parts:
        if part.extras.get("_group") != group or "_group" not in part.extras:
            group = part.extras.get("_group")
            msg: dict[str, Any] = {"role": part.extras.get("_role", "system")}
            if "_name" in part.extras:
                msg["name"] = part.extras["_name"]
            msg["content"] = [] if part.extras.get("_array") else ""
            messages.append(msg)
        if isinstance(msg["content"], list):
            msg["content"].append(_text(part, True))
        else:
            msg["content"] += part.text
    return messages


def _text(part: TextPart, same: bool) -> dict[str, Any]:
    out = _wire(part.extras) if same else {}
    return {**out, "type": "text", "text": part.text}


def _encode_messages(messages: list[Message], same: bool) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for msg in messages:
        if msg.role == "assistant":
            out.append(_encode_assistant(msg, same))
        elif msg.role == "system":
            text = "\n\n".join(p.text for p in msg.parts if isinstance(p, TextPart))
            out.append({"role": "system", "content": text})
        else:
            out.extend(_encode_user_or_tool(msg, same))
    return out


def _encode_user_or_tool(msg: Message, same: bool) -> list[dict[str, Any]]:
    """Tool results become `tool` messages (first, as Chat requires them right after the calls); the
    remaining parts, plus any images a tool returned, form a `user` message."""
    hints = msg.extras if same else {}
    results = [p for p in msg.parts if isinstance(p, ToolResultPart)]
    others: list[InputPart] = [p for p in msg.parts if not isinstance(p, ToolResultPart)]
    out: list[dict[str, Any]] = []
    for result in results:
        tool_msg: dict[str, Any] = {**_wire(hints), "role": "tool", "tool_call_id": result.tool_call_id}
        if isinstance(result.content, str):
            tool_msg["content"] = result.content
        else:
            texts = [p for p in result.content if isinstance(p, TextPart)]
            tool_msg["content"] = [_text(p, same) for p in texts] if same else result.text
            others.extend(p for p in result.content if isinstance(p, ImagePart))
        out.append(tool_msg)
    if others or (msg.role == "user" and not results):
        user: dict[str, Any] = {**_wire(hints), "role": "user"} if msg.role == "user" else {"role": "user"}
        if msg.name is not None:
            user["name"] = msg.name
        user["content"] = _user_content(others, hints, same)
        out.append(user)
    return out


def _user_content(parts: list[InputPart], hints: dict[str, Any], same: bool) -> str | list[dict[str, Any]]:
    encoded = [e for e in (_encode_user_part(p, same) for p in parts) if e is not None]
    if not hints.get("_array") and len(parts) == 1 and isinstance(parts[0], TextPart) and not _wire_if(parts[0], same):
        return parts[0].text
    if not encoded:
        return ""
    return encoded


def _wire_if(part: InputPart, same: bool) -> dict[str, Any]:
    return _wire(part.extras) if same else {}


def _encode_user_part(part: InputPart, same: bool) -> dict[str, Any] | None:
    extra = _wire_if(part, same)
    if isinstance(part, TextPart):
        return _text(part, same)
    if isinstance(part, ImagePart):
        image: dict[str, Any] = {"url": part.url if part.url is not None else part.data_url}
        if part.detail is not None:
            image["detail"] = part.detail
        if same:
            image.update(_sub(part.extras, "image"))
        return {**extra, "type": "image_url", "image_url": image}
    if isinstance(part, FilePart):
        return {**extra, "type": "file", "file": _encode_file(part, same)}
    if isinstance(part, AudioPart):
        return {**extra, "type": "input_audio", "input_audio": {"data": part.data, "format": part.format}}
    return None  # refusals, tool calls and reasoning are not user content in Chat


def _encode_file(part: FilePart, same: bool) -> dict[str, Any]:
    hints = part.extras if same else {}
    file: dict[str, Any] = {}
    if "_field" in hints:
        field = hints["_field"]
    elif part.url is not None or part.is_video:
        field = "file_id"  # this service's convention for URLs and video (with `format`)
    else:
        field = "file_data"
    if part.url is not None:
        value = part.url
    elif hints.get("_bare"):
        value = part.data or ""
    else:
        value = part.data_url or ""
    if part.filename is not None:
        file["filename"] = part.filename
    file[field] = value
    if part.media_type is not None and (hints.get("_format") or (not same and field == "file_id")):
        file["format"] = part.media_type
    if same:
        file.update(_sub(part.extras, "file"))
    return file


def _encode_assistant(msg: Message, same: bool) -> dict[str, Any]:
    hints = msg.extras if same else {}
    out: dict[str, Any] = {**_wire(hints), "role": "assistant"}
    if msg.name is not None:
        out["name"] = msg.name
    texts = [p for p in msg.parts if isinstance(p, TextPart)]
    in_content = [p for p in msg.parts if isinstance(p, RefusalPart) and p.extras.get("_in_content") and same]
    refusals = [p for p in msg.parts if isinstance(p, RefusalPart) and p not in in_content]
    calls = [p for p in msg.parts if isinstance(p, ToolCallPart)]
    if hints.get("_array"):
        out["content"] = [
            {"type": "refusal", "refusal": p.text} if isinstance(p, RefusalPart) else _text(p, True)
            for p in msg.parts
            if isinstance(p, TextPart) or p in in_content
        ]
    elif texts:
        out["content"] = "".join(p.text for p in texts)
    elif hints.get("_content_null") or (not same and calls):
        out["content"] = None
    if refusals:
        out["refusal"] = "".join(p.text for p in refusals)
    elif hints.get("_refusal_null"):
        out["refusal"] = None
    if calls:
        out["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}} for c in calls
        ]
    if "content" not in out and "tool_calls" not in out and "refusal" not in out:
        out["content"] = ""
    return out
