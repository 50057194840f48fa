"""`CanonicalRequest` → Responses request body for an upstream.

From a Responses client (``source_protocol == "openai_responses"``) the extras and shape hints rebuild the
body the client sent (apart from `model`), hosted tools and items included. From other protocols:
system parts become ``instructions``; tool results become ``function_call_output`` items; reasoning
parts that did not come from OpenAI (no item id) are dropped, as are ``stop`` sequences and ``n``, which
Responses lacks. Audio input cannot be expressed and is refused.
"""

from __future__ import annotations

from typing import Any

from modelport.core.messages import CanonicalRequest, Message
from modelport.core.parts import (
    AudioPart,
    FilePart,
    ImagePart,
    InputPart,
    OpaquePart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from modelport.errors import InvalidParameters
from modelport.protocols.openai_common import carry_to_responses
from modelport.protocols.openai_effort import effort_from_budget
from modelport.protocols.openai_responses.input_decode import summary_texts
from modelport.protocols.openai_responses.items import is_generated_id
from modelport.protocols.openai_responses.request_decode import MIN_OUTPUT_TOKENS, PROTOCOL
from modelport.protocols.openai_responses.text_format import text_to_wire
from modelport.protocols.openai_responses.tools import tool_choice_to_wire, tools_to_wire

ENCRYPTED_REASONING = "reasoning.encrypted_content"


def _wire(extras: dict[str, Any]) -> dict[str, Any]:
    """The wire fields among `extras` (shape hints start with ``_``)."""
    return {k: v for k, v in extras.items() if not k.startswith("_")}


def _put(body: dict[str, Any], key: str, value: Any) -> None:
    if value is not None:
        body[key] = value


def encode_request(req: CanonicalRequest, upstream_model: str) -> dict[str, Any]:
    same = req.source_protocol == PROTOCOL
    hints = req.extras if same else {}
    body: dict[str, Any] = _wire(hints)
    body["model"] = upstream_model
    _encode_instructions(req, same, body)
    body["input"] = encode_input(req, same)
    if req.stream or hints.get("_stream_false"):
        body["stream"] = req.stream
    if req.max_output_tokens is not None:
        # Other protocols allow caps below the Responses minimum; the API would refuse them.
        body["max_output_tokens"] = req.max_output_tokens if same else max(req.max_output_tokens, MIN_OUTPUT_TOKENS)
    _put(body, "temperature", req.temperature)
    _put(body, "top_p", req.top_p)
    _put(body, "user", req.user)
    if req.metadata is not None:
        body["metadata"] = dict(req.metadata)
    _encode_reasoning(req, hints, body)
    text = text_to_wire(req, same)
    if text is not None:
        body["text"] = text
    tools = tools_to_wire(req, same)
    if tools:
        body["tools"] = tools
    if "_tool_choice_raw" in hints:
        body["tool_choice"] = hints["_tool_choice_raw"]
    elif req.tool_choice is not None:
        body["tool_choice"] = tool_choice_to_wire(req.tool_choice)
    _put(body, "parallel_tool_calls", req.parallel_tool_calls)
    carry_to_responses(req, body)
    return body


def _encode_instructions(req: CanonicalRequest, same: bool, body: dict[str, Any]) -> None:
    if not same:
        if req.system:
            body["instructions"] = req.system_text
        return
    own = [p.text for p in req.system if p.extras.get("_instructions")]
    if own:
        body["instructions"] = "\n\n".join(own)
    elif req.extras.get("_instructions_empty"):
        body["instructions"] = ""


def _encode_reasoning(req: CanonicalRequest, hints: dict[str, Any], body: dict[str, Any]) -> None:
    if req.reasoning is None:
        return
    if "_reasoning" in hints:
        body["reasoning"] = hints["_reasoning"]
        return
    if not req.reasoning.enabled and req.reasoning.effort is None:
        return  # thinking off: say nothing, non-reasoning models reject the parameter
    # Thinking on from another protocol (Anthropic `adaptive` names no budget): a medium effort, a summary so
    # the client sees thinking text, and the encrypted reasoning so the client can send it back (the gateway
    # keeps no state between turns; `protocols.reasoning_carry` wraps it into the client's protocol).
    effort = req.reasoning.effort or effort_from_budget(req.reasoning.budget_tokens) or "medium"
    if not req.reasoning.enabled:
        body["reasoning"] = {"effort": effort}
        return
    body["reasoning"] = {"effort": effort, "summary": req.reasoning.summary or "auto"}
    include = body.setdefault("include", [])
    if ENCRYPTED_REASONING not in include:
        include.append(ENCRYPTED_REASONING)


# --- input ----------------------------------------------------------------------------------------------


def encode_input(req: CanonicalRequest, same: bool) -> str | list[dict[str, Any]]:
    if (
        same
        and req.extras.get("_input_string")
        and len(req.messages) == 1
        and req.messages[0].role == "user"
        and len(req.messages[0].parts) == 1
        and isinstance(req.messages[0].parts[0], TextPart)
    ):
        return req.messages[0].parts[0].text
    anchored = _anchored_items(req) if same else {}
    items: list[dict[str, Any]] = []
    for position, msg in enumerate(req.messages):
        items.extend(item for _, item in sorted(anchored.pop(position, []), key=lambda pair: pair[0]))
        items.extend(_encode_message(msg, same))
    for position in sorted(anchored):
        items.extend(item for _, item in sorted(anchored[position], key=lambda pair: pair[0]))
    return items


def _anchored_items(req: CanonicalRequest) -> dict[int, list[tuple[int, dict[str, Any]]]]:
    """Items that sit between messages: system/developer messages and hosted items, keyed by the index of
    the canonical message they precede, each with its original input index for ordering."""
    anchored: dict[int, list[tuple[int, dict[str, Any]]]] = {}
    for position, index, raw in req.extras.get("_other_items", []):
        anchored.setdefault(position, []).append((index, raw))
    groups: dict[int, list[TextPart]] = {}
    for part in req.system:
        if "_at" in part.extras:
            groups.setdefault(part.extras["_item"], []).append(part)
    for index, parts in groups.items():
        first = parts[0].extras
        item: dict[str, Any] = {**first.get("_item_fields", {}), "role": first.get("_role", "system")}
        if first.get("_string") and len(parts) == 1:
            item["content"] = parts[0].text
        else:
            item["content"] = [{**_wire(p.extras), "type": "input_text", "text": p.text} for p in parts]
        anchored.setdefault(first["_at"], []).append((index, item))
    return anchored


def _encode_message(msg: Message, same: bool) -> list[dict[str, Any]]:
    if msg.role == "assistant":
        return _encode_assistant(msg, same)
    if msg.role == "system":
        # A mid-conversation instruction: Responses' own form is a developer message at that place.
        content = [{"type": "input_text", "text": p.text} for p in msg.parts if isinstance(p, TextPart)]
        return [{"type": "message", "role": "developer", "content": content}]
    out: list[dict[str, Any]] = []
    others: list[InputPart] = []
    for part in msg.parts:
        if isinstance(part, ToolResultPart):
            out.append(_encode_result(part, same))
        elif isinstance(part, OpaquePart):
            if part.protocol == PROTOCOL:
                out.append(dict(part.data))
        else:
            others.append(part)
    if others or (msg.role == "user" and not out):
        hints = msg.extras if same else {}
        item: dict[str, Any] = {**_wire(hints), "role": "user"}
        if len(others) == 1 and isinstance(others[0], TextPart) and (hints.get("_string") or not same):
            item["content"] = others[0].text
        else:
            item["content"] = [_encode_user_part(p, same) for p in others]
        out.append(item)
    return out


def _encode_user_part(part: InputPart, same: bool) -> dict[str, Any]:
    extra = _wire(part.extras) if same else {}
    if isinstance(part, TextPart):
        return {**extra, "type": "input_text", "text": part.text}
    if isinstance(part, ImagePart):
        image: dict[str, Any] = {**extra, "type": "input_image", "image_url": part.url or part.data_url}
        if part.detail is not None or not same:
            image["detail"] = part.detail or "auto"
        return image
    if isinstance(part, FilePart):
        return {**extra, **_file(part, same)}
    if isinstance(part, AudioPart):
        raise InvalidParameters(
            "Audio input cannot be sent to this model: its upstream speaks the Responses API, which takes no audio.",
            param="messages",
        )
    raise InvalidParameters(f"A {part.kind} part cannot appear in a user message of a Responses request.")


def _file(part: FilePart, same: bool) -> dict[str, Any]:
    hints = part.extras if same else {}
    out: dict[str, Any] = {"type": "input_file"}
    if part.url is not None:
        out["file_url"] = part.url
    elif hints.get("_bare"):
        out["file_data"] = part.data
    elif hints.get("_in_url"):
        out["file_url"] = part.data_url
    else:
        out["file_data"] = part.data_url
    filename = part.filename
    if filename is None and part.url is None and not same:
        # The API wants a name with inline data; derive one from the media type.
        subtype = (part.media_type or "application/octet-stream").split("/")[-1]
        filename = f"file.{subtype}"
    _put(out, "filename", filename)
    return out


def _encode_result(part: ToolResultPart, same: bool) -> dict[str, Any]:
    item: dict[str, Any] = {**(_wire(part.extras) if same else {}), "type": "function_call_output"}
    item["call_id"] = part.tool_call_id
    if isinstance(part.content, str):
        item["output"] = part.content
    elif not same and all(isinstance(p, TextPart) for p in part.content):
        item["output"] = part.text
    else:
        item["output"] = [_encode_user_part(p, same) for p in part.content]
    return item


def _encode_assistant(msg: Message, same: bool) -> list[dict[str, Any]]:
    """Assistant parts in order: runs of text/refusal parts become ``message`` items (split where the
    client's items were split), calls become ``function_call`` items, reasoning ``reasoning`` items."""
    out: list[dict[str, Any]] = []
    run: list[TextPart | RefusalPart] = []

    def flush() -> None:
        if run:
            out.append(_assistant_message(run, same))
            run.clear()

    for part in msg.parts:
        if isinstance(part, TextPart | RefusalPart):
            if run and same and run[-1].extras.get("_item") != part.extras.get("_item"):
                flush()
            run.append(part)
            continue
        flush()
        if isinstance(part, ToolCallPart):
            out.append(_function_call(part, same))
        elif isinstance(part, ReasoningPart):
            item = _reasoning(part, same)
            if item is not None:
                out.append(item)
        elif isinstance(part, OpaquePart) and part.protocol == PROTOCOL:
            out.append(dict(part.data))
    flush()
    return out


def _assistant_message(run: list[TextPart | RefusalPart], same: bool) -> dict[str, Any]:
    first = run[0].extras if same else {}
    item: dict[str, Any] = {**first.get("_item_fields", {}), "role": "assistant"}
    if first.get("_empty"):
        item["content"] = []
    elif len(run) == 1 and isinstance(run[0], TextPart) and (first.get("_string") or not same):
        item["content"] = run[0].text
    else:
        item["content"] = [_assistant_part(p, same) for p in run]
    return item


def _assistant_part(part: TextPart | RefusalPart, same: bool) -> dict[str, Any]:
    extra = _wire(part.extras) if same else {}
    if isinstance(part, RefusalPart):
        return {**extra, "type": "refusal", "refusal": part.text}
    kind = part.extras.get("_ptype", "output_text") if same else "output_text"
    if kind == "output_text" and not same:
        extra = {"annotations": []}
    return {**extra, "type": kind, "text": part.text}


def _function_call(part: ToolCallPart, same: bool) -> dict[str, Any]:
    extra = _wire(part.extras) if same else {}
    return {**extra, "type": "function_call", "call_id": part.id, "name": part.name, "arguments": part.arguments}


def _reasoning(part: ReasoningPart, same: bool) -> dict[str, Any] | None:
    """A reasoning item, or None when it cannot be replayed: OpenAI resolves reasoning by its item id
    (or decrypts `encrypted_content`), so reasoning from another provider, or under an id this gateway
    invented, is dropped."""
    if part.id is None or (is_generated_id(part.id) and part.encrypted_content is None):
        return None
    extra = _wire(part.extras) if same else {}
    item: dict[str, Any] = {**extra, "type": "reasoning", "id": part.id}
    raw_summary = part.extras.get("_summary") if same else None
    if raw_summary is not None and "\n\n".join(summary_texts(raw_summary)) == part.text:
        item["summary"] = raw_summary
    else:
        item["summary"] = [{"type": "summary_text", "text": part.text}] if part.text else []
    _put(item, "encrypted_content", part.encrypted_content)
    return item
