"""Responses ``input`` (a string or a list of items) → canonical messages, with validation.

Item mapping:
- ``message`` items: ``user`` → a user `Message`; ``system``/``developer`` → `CanonicalRequest.system`
  parts; ``assistant`` → parts of an assistant `Message`.
- ``function_call`` → `ToolCallPart` (canonical id = ``call_id``), ``reasoning`` → `ReasoningPart`; both,
  like assistant messages, join the assistant `Message` being built, so one model turn (reasoning, text,
  calls) is one canonical message, as other protocols expect.
- ``function_call_output`` → a ``tool`` `Message` holding one `ToolResultPart`.
- OpenAI-hosted items (``web_search_call``, ``item_reference``, MCP, ...) have no canonical form; they are
  kept in the ``_other_items`` hint as ``[message position, input index, item]`` for a Responses upstream.

Shape hints (extras keys starting with ``_``) let the Responses encoder rebuild the same items:
``_item`` (input index), ``_string`` (content was a string), ``_at`` (position of a system item among
messages), ``_item_fields`` (wire fields of an assistant message item), ``_ptype`` (text part type).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelport.core.media import check_inline_media, inline_data_url, media_reference
from modelport.core.messages import CanonicalRequest, Message
from modelport.core.parts import (
    FilePart,
    ImagePart,
    InputPart,
    ReasoningPart,
    RefusalPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from modelport.core.validate import as_list, as_object, opt_list, opt_str, require, require_str
from modelport.errors import InvalidParameters
from modelport.protocols.reasoning_carry import unwrap_anthropic

# Item types of the Responses API that are passed through to a Responses upstream untouched.
PASSTHROUGH_ITEMS = frozenset(
    {
        "item_reference",
        "file_search_call",
        "web_search_call",
        "computer_call",
        "computer_call_output",
        "image_generation_call",
        "code_interpreter_call",
        "local_shell_call",
        "local_shell_call_output",
        "shell_call",
        "shell_call_output",
        "apply_patch_call",
        "apply_patch_call_output",
        "mcp_list_tools",
        "mcp_approval_request",
        "mcp_approval_response",
        "mcp_call",
        "custom_tool_call",
        "custom_tool_call_output",
        "tool_search_call",
        "tool_search_output",
        "additional_tools",
        "compaction",
        "compaction_trigger",
        "program",
        "program_output",
    }
)

_ROLES = ("user", "assistant", "system", "developer")
_IMAGE_DETAILS = ("auto", "low", "high", "original")


@dataclass(slots=True)
class _State:
    """Whether the next assistant-side item may join the last canonical message."""

    merge: bool = False


def decode_input(value: Any, req: CanonicalRequest) -> None:
    """Append the decoded `input` to `req.messages` / `req.system`."""
    if isinstance(value, str):
        req.messages.append(Message(role="user", parts=[TextPart(text=value)]))
        req.extras["_input_string"] = True
        return
    items = as_list(value, "input")
    if not items:
        raise InvalidParameters("'input' must not be empty.", param="input")
    state = _State()
    for i, raw in enumerate(items):
        _decode_item(raw, i, req, state)


def _wire(obj: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in known}


def _decode_item(raw: Any, i: int, req: CanonicalRequest, state: _State) -> None:
    param = f"input[{i}]"
    item = as_object(raw, param)
    kind = item.get("type")
    if kind is None or kind == "message":
        _decode_message(item, i, req, state)
        return
    if not isinstance(kind, str):
        raise InvalidParameters(f"Invalid type for '{param}.type': expected a string.", param=f"{param}.type")
    if kind == "function_call":
        _assistant(req, state).parts.append(_decode_function_call(item, i))
    elif kind == "reasoning":
        _assistant(req, state).parts.append(_decode_reasoning(item, i))
    elif kind == "function_call_output":
        req.messages.append(Message(role="tool", parts=[_decode_call_output(item, param)]))
        state.merge = False
    elif kind in PASSTHROUGH_ITEMS:
        req.extras.setdefault("_other_items", []).append([len(req.messages), i, item])
        state.merge = False
    else:
        raise InvalidParameters(f"Invalid value for '{param}.type': '{kind}'.", param=f"{param}.type")


def _assistant(req: CanonicalRequest, state: _State) -> Message:
    """The assistant message the current model turn belongs to (started on demand)."""
    if state.merge and req.messages and req.messages[-1].role == "assistant":
        return req.messages[-1]
    msg = Message(role="assistant", parts=[])
    req.messages.append(msg)
    state.merge = True
    return msg


# --- message items --------------------------------------------------------------------------------------


def _decode_message(item: dict[str, Any], i: int, req: CanonicalRequest, state: _State) -> None:
    param = f"input[{i}]"
    role = require_str(item, "role", f"{param}.role")
    if role not in _ROLES:
        raise InvalidParameters(
            f"Invalid value for '{param}.role': '{role}'. Supported values are: 'user', 'assistant', 'system' "
            "and 'developer' (tool results are 'function_call_output' items).",
            param=f"{param}.role",
        )
    content = require(item, "content", f"{param}.content")
    fields = _wire(item, ("role", "content"))
    if role == "assistant":
        _decode_assistant_message(content, fields, i, _assistant(req, state))
        return
    state.merge = False
    if role == "user":
        parts = _user_parts(content, f"{param}.content")
        extras: dict[str, Any] = dict(fields)
        if isinstance(content, str):
            extras["_string"] = True
        req.messages.append(Message(role="user", parts=parts, extras=extras))
        return
    hint: dict[str, Any] = {"_role": role, "_at": len(req.messages), "_item": i, "_item_fields": fields}
    if isinstance(content, str):
        req.system.append(TextPart(text=content, extras={**hint, "_string": True}))
        return
    parts_raw = as_list(content, f"{param}.content")
    for j, raw in enumerate(parts_raw):
        pp = f"{param}.content[{j}]"
        part = as_object(raw, pp)
        kind = require_str(part, "type", f"{pp}.type")
        if kind != "input_text":
            raise InvalidParameters(
                f"Invalid value for '{pp}.type': '{kind}'; {role} messages accept 'input_text' parts only.",
                param=f"{pp}.type",
            )
        text = require_str(part, "text", f"{pp}.text")
        req.system.append(TextPart(text=text, extras={**_wire(part, ("type", "text")), **hint}))


def _decode_assistant_message(content: Any, fields: dict[str, Any], i: int, msg: Message) -> None:
    param = f"input[{i}].content"
    hint: dict[str, Any] = {"_item": i, "_item_fields": fields}
    if isinstance(content, str):
        msg.parts.append(TextPart(text=content, extras={**hint, "_string": True}))
        return
    items = as_list(content, param)
    if not items:
        msg.parts.append(TextPart(text="", extras={**hint, "_empty": True}))
        return
    for j, raw in enumerate(items):
        pp = f"{param}[{j}]"
        part = as_object(raw, pp)
        kind = require_str(part, "type", f"{pp}.type")
        if kind in ("output_text", "input_text"):
            text = require_str(part, "text", f"{pp}.text")
            msg.parts.append(TextPart(text=text, extras={**_wire(part, ("type", "text")), **hint, "_ptype": kind}))
        elif kind == "refusal":
            text = require_str(part, "refusal", f"{pp}.refusal")
            msg.parts.append(RefusalPart(text=text, extras={**_wire(part, ("type", "refusal")), **hint}))
        else:
            raise InvalidParameters(
                f"Invalid value for '{pp}.type': '{kind}'. Supported values are: 'output_text' and 'refusal'.",
                param=f"{pp}.type",
            )


def _user_parts(content: Any, param: str) -> list[InputPart]:
    if isinstance(content, str):
        return [TextPart(text=content)]
    items = as_list(content, param)
    if not items:
        raise InvalidParameters(f"'{param}' must not be empty.", param=param)
    parts: list[InputPart] = []
    for j, raw in enumerate(items):
        part = decode_content_part(raw, f"{param}[{j}]")
        if part is not None:
            parts.append(part)
    return parts


def decode_content_part(raw: Any, param: str) -> TextPart | ImagePart | FilePart | None:
    """One ``input_text`` / ``input_image`` / ``input_file`` part; None for a part the interface says to
    ignore (a local file path)."""
    part = as_object(raw, param)
    kind = require_str(part, "type", f"{param}.type")
    if kind == "input_text":
        return TextPart(text=require_str(part, "text", f"{param}.text"), extras=_wire(part, ("type", "text")))
    if kind == "input_image":
        return _decode_image(part, param)
    if kind == "input_file":
        return _decode_file(part, param)
    if kind == "input_audio":
        raise InvalidParameters(
            f"Invalid value for '{param}.type': 'input_audio'. The Responses API takes no audio input; "
            "use Chat Completions 'input_audio' parts.",
            param=f"{param}.type",
        )
    raise InvalidParameters(
        f"Invalid value for '{param}.type': '{kind}'. Supported values are: 'input_text', 'input_image' and "
        "'input_file'.",
        param=f"{param}.type",
    )


def _reject_file_id(part: dict[str, Any], param: str) -> None:
    file_id = opt_str(part, "file_id", f"{param}.file_id")
    if file_id is not None:
        raise InvalidParameters(
            f"Invalid value for '{param}.file_id': provider file ids are not supported; pass a public HTTPS "
            "URL (e.g. a media file's download_url) or inline base64 data.",
            param=f"{param}.file_id",
        )


def _decode_image(part: dict[str, Any], param: str) -> ImagePart | None:
    _reject_file_id(part, param)
    url_param = f"{param}.image_url"
    url = require_str(part, "image_url", url_param, non_empty=True)
    detail = opt_str(part, "detail", f"{param}.detail")
    if detail is not None and detail not in _IMAGE_DETAILS:
        raise InvalidParameters(f"Invalid value for '{param}.detail': '{detail}'.", param=f"{param}.detail")
    extras = _wire(part, ("type", "image_url", "detail", "file_id"))
    ref = media_reference(url, url_param)
    if ref is None:
        return None
    return ImagePart(url=ref.url, data=ref.data, media_type=ref.media_type, detail=detail, extras=extras)


def _decode_file(part: dict[str, Any], param: str) -> FilePart | None:
    _reject_file_id(part, param)
    file_url = opt_str(part, "file_url", f"{param}.file_url")
    file_data = opt_str(part, "file_data", f"{param}.file_data")
    filename = opt_str(part, "filename", f"{param}.filename")
    extras = _wire(part, ("type", "file_url", "file_data", "filename", "file_id"))
    if file_data is not None:
        dp = f"{param}.file_data"
        if file_data.startswith("data:"):
            media_type, data = inline_data_url(file_data, dp)
            return FilePart(data=data, media_type=media_type, filename=filename, extras=extras)
        # OpenAI also accepts bare base64 here.
        check_inline_media(file_data, dp)
        return FilePart(data=file_data, filename=filename, extras={**extras, "_bare": True})
    if file_url is None:
        raise InvalidParameters(
            f"Missing required parameter: '{param}.file_url' (or '{param}.file_data').", param=f"{param}.file_url"
        )
    up = f"{param}.file_url"
    ref = media_reference(file_url, up)
    if ref is None:
        return None  # a local path: ignored, as the interface says
    if ref.data is not None:
        extras = {**extras, "_in_url": True}
    return FilePart(url=ref.url, data=ref.data, media_type=ref.media_type, filename=filename, extras=extras)


# --- tool and reasoning items ---------------------------------------------------------------------------


def _decode_function_call(item: dict[str, Any], i: int) -> ToolCallPart:
    param = f"input[{i}]"
    return ToolCallPart(
        id=require_str(item, "call_id", f"{param}.call_id", non_empty=True),
        name=require_str(item, "name", f"{param}.name", non_empty=True),
        arguments=require_str(item, "arguments", f"{param}.arguments"),
        extras={**_wire(item, ("type", "call_id", "name", "arguments")), "_item": i},
    )


def _decode_call_output(item: dict[str, Any], param: str) -> ToolResultPart:
    call_id = require_str(item, "call_id", f"{param}.call_id", non_empty=True)
    output = require(item, "output", f"{param}.output")
    extras = _wire(item, ("type", "call_id", "output"))
    if isinstance(output, str):
        return ToolResultPart(tool_call_id=call_id, content=output, extras=extras)
    parts: list[TextPart | ImagePart] = []
    for j, raw in enumerate(as_list(output, f"{param}.output")):
        pp = f"{param}.output[{j}]"
        part = decode_content_part(raw, pp)
        if isinstance(part, FilePart):
            raise InvalidParameters(
                f"Invalid value for '{pp}.type': 'input_file' is not supported in a function_call_output; "
                "return text or images.",
                param=f"{pp}.type",
            )
        if part is not None:
            parts.append(part)
    return ToolResultPart(tool_call_id=call_id, content=tuple(parts), extras=extras)


def summary_texts(summary: Any) -> list[str]:
    """The texts of a reasoning item's ``summary`` list (non-text entries skipped)."""
    if not isinstance(summary, list):
        return []
    return [s["text"] for s in summary if isinstance(s, dict) and isinstance(s.get("text"), str)]


def _decode_reasoning(item: dict[str, Any], i: int) -> ReasoningPart:
    param = f"input[{i}]"
    summary = opt_list(item, "summary", f"{param}.summary") or []
    for j, raw in enumerate(summary):
        entry = as_object(raw, f"{param}.summary[{j}]")
        require_str(entry, "text", f"{param}.summary[{j}].text")
    encrypted = opt_str(item, "encrypted_content", f"{param}.encrypted_content")
    carried = unwrap_anthropic(encrypted)
    if carried is not None:
        # An Anthropic thinking block we handed out as this item: it goes back as that block, text included.
        return ReasoningPart(text=carried.text, signature=carried.signature, redacted=carried.redacted)
    extras = _wire(item, ("type", "id", "encrypted_content", "summary"))
    extras.update({"_item": i, "_summary": summary})
    return ReasoningPart(
        text="\n\n".join(summary_texts(summary)),
        id=opt_str(item, "id", f"{param}.id"),
        encrypted_content=encrypted,
        extras=extras,
    )
