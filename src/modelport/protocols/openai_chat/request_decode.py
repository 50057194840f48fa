"""Chat Completions request body → `CanonicalRequest`, with validation.

Every rejection is an `InvalidParameters` whose `param` is the dotted path of the bad field.

Shape hints: fields of the original body that have no canonical slot are kept in `extras` (top level,
message, part) under their wire names, so a Chat upstream gets them back. Keys starting with ``_`` are
shape hints for the Chat encoder only (e.g. that `stop` was a string), never wire fields.
"""

from __future__ import annotations

from typing import Any

from modelport.catalog_spec import OUTPUT_TOKENS_CEILING
from modelport.core.media import (
    check_inline_media,
    is_remote_url,
    media_reference,
)
from modelport.core.messages import (
    CanonicalRequest,
    Message,
    ReasoningConfig,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
)
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
from modelport.core.validate import (
    as_list,
    as_object,
    as_str,
    opt_bool,
    opt_int,
    opt_list,
    opt_number,
    opt_object,
    opt_str,
    reject_foreign_fields,
    require,
    require_str,
)
from modelport.errors import InvalidParameters

PROTOCOL = "openai_chat"

# Top-level fields that belong to the other two protocols: mixing them is a client error.
_FOREIGN_FIELDS = {
    "input": "Responses",
    "instructions": "Responses",
    "max_output_tokens": "Responses",
    "previous_response_id": "Responses",
    "system": "Messages",
    "stop_sequences": "Messages",
}

# Top-level fields mapped to canonical slots (everything else goes to `extras`).
_CANONICAL_FIELDS = {
    "model",
    "messages",
    "stream",
    "stream_options",
    "max_tokens",
    "max_completion_tokens",
    "temperature",
    "top_p",
    "n",
    "stop",
    "tools",
    "tool_choice",
    "parallel_tool_calls",
    "reasoning_effort",
    "response_format",
    "user",
    "metadata",
}

_AUDIO_FORMATS = ("wav", "mp3")


def decode_request(body: dict[str, Any]) -> CanonicalRequest:
    body = as_object(body, "body")
    reject_foreign_fields(body, _FOREIGN_FIELDS, "Chat Completions uses 'messages'")
    model = require_str(body, "model", "model", non_empty=True)
    raw_messages = as_list(require(body, "messages", "messages"), "messages")
    if not raw_messages:
        raise InvalidParameters("'messages' must contain at least one message.", param="messages")

    req = CanonicalRequest(model=model, messages=[], source_protocol=PROTOCOL)
    for i, raw in enumerate(raw_messages):
        _decode_message(raw, f"messages[{i}]", req)

    _decode_generation(body, req)
    _decode_tools(body, req)
    req.extras.update({k: v for k, v in body.items() if k not in _CANONICAL_FIELDS})
    return req


def _decode_generation(body: dict[str, Any], req: CanonicalRequest) -> None:
    req.stream = bool(opt_bool(body, "stream", "stream"))
    options = opt_object(body, "stream_options", "stream_options")
    if options is not None:
        req.include_usage = bool(opt_bool(options, "include_usage", "stream_options.include_usage"))
        req.extras["stream_options"] = options
    ceiling = OUTPUT_TOKENS_CEILING
    max_completion = opt_int(body, "max_completion_tokens", "max_completion_tokens", minimum=1, maximum=ceiling)
    max_tokens = opt_int(body, "max_tokens", "max_tokens", minimum=1, maximum=ceiling)
    req.max_output_tokens = max_completion if max_completion is not None else max_tokens
    if max_completion is None and max_tokens is not None:
        req.extras["_max_tokens_field"] = "max_tokens"
    req.temperature = opt_number(body, "temperature", "temperature", minimum=0, maximum=2)
    req.top_p = opt_number(body, "top_p", "top_p", minimum=0, maximum=1)
    req.n = opt_int(body, "n", "n", minimum=1, maximum=128)
    req.stop = _decode_stop(body.get("stop"), req)
    effort = opt_str(body, "reasoning_effort", "reasoning_effort")
    if effort is not None:
        req.reasoning = ReasoningConfig(effort=effort, enabled=effort != "none")
    req.response_format = _decode_response_format(body.get("response_format"), req)
    req.user = opt_str(body, "user", "user")
    metadata = opt_object(body, "metadata", "metadata")
    if metadata is not None:
        for key, value in metadata.items():
            as_str(value, f"metadata.{key}")
        req.metadata = dict(metadata)


def _decode_stop(value: Any, req: CanonicalRequest) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        req.extras["_stop_string"] = True
        return [value]
    items = as_list(value, "stop")
    if len(items) > 4:
        raise InvalidParameters("'stop' accepts at most 4 sequences.", param="stop")
    return [as_str(item, f"stop[{i}]") for i, item in enumerate(items)]


def _decode_response_format(value: Any, req: CanonicalRequest) -> ResponseFormat | None:
    if value is None:
        return None
    fmt = as_object(value, "response_format")
    kind = require_str(fmt, "type", "response_format.type")
    if kind == "text":
        return ResponseFormat(type="text")
    if kind == "json_object":
        return ResponseFormat(type="json_object")
    if kind != "json_schema":
        raise InvalidParameters(f"Invalid value for 'response_format.type': '{kind}'.", param="response_format.type")
    spec = as_object(require(fmt, "json_schema", "response_format.json_schema"), "response_format.json_schema")
    schema = opt_object(spec, "schema", "response_format.json_schema.schema")
    if "schema" in spec and schema is None:
        req.extras["_schema_null"] = True
    return ResponseFormat(
        type="json_schema",
        name=require_str(spec, "name", "response_format.json_schema.name"),
        schema=schema,
        strict=opt_bool(spec, "strict", "response_format.json_schema.strict"),
        description=opt_str(spec, "description", "response_format.json_schema.description"),
    )


def _decode_tools(body: dict[str, Any], req: CanonicalRequest) -> None:
    tools = opt_list(body, "tools", "tools")
    other_tools: list[dict[str, Any]] = []
    for i, raw in enumerate(tools or []):
        tool = as_object(raw, f"tools[{i}]")
        kind = require_str(tool, "type", f"tools[{i}].type")
        if kind != "function":
            # Custom tools have no canonical form; kept so a Chat upstream still receives them.
            other_tools.append(tool)
            continue
        fn = as_object(require(tool, "function", f"tools[{i}].function"), f"tools[{i}].function")
        name = require_str(fn, "name", f"tools[{i}].function.name", non_empty=True)
        req.tools.append(
            ToolSpec(
                name=name,
                description=opt_str(fn, "description", f"tools[{i}].function.description"),
                parameters=opt_object(fn, "parameters", f"tools[{i}].function.parameters"),
                strict=opt_bool(fn, "strict", f"tools[{i}].function.strict"),
                extras={k: v for k, v in fn.items() if k not in ("name", "description", "parameters", "strict")},
            )
        )
    if other_tools:
        req.extras["_other_tools"] = other_tools
    req.tool_choice = _decode_tool_choice(body.get("tool_choice"), req)
    req.parallel_tool_calls = opt_bool(body, "parallel_tool_calls", "parallel_tool_calls")


def _decode_tool_choice(value: Any, req: CanonicalRequest) -> ToolChoice | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value not in ("auto", "none", "required"):
            raise InvalidParameters(f"Invalid value for 'tool_choice': '{value}'.", param="tool_choice")
        return ToolChoice(mode=value)  # type: ignore[arg-type]  # narrowed by the check above
    choice = as_object(value, "tool_choice")
    kind = require_str(choice, "type", "tool_choice.type")
    if kind == "function":
        fn = as_object(require(choice, "function", "tool_choice.function"), "tool_choice.function")
        return ToolChoice(mode="named", name=require_str(fn, "name", "tool_choice.function.name"))
    if kind == "allowed_tools":
        allowed = as_object(require(choice, "allowed_tools", "tool_choice.allowed_tools"), "tool_choice.allowed_tools")
        mode = opt_str(allowed, "mode", "tool_choice.allowed_tools.mode") or "auto"
        req.extras["_tool_choice_raw"] = choice
        return ToolChoice(mode="required" if mode == "required" else "auto")
    if kind == "custom":
        req.extras["_tool_choice_raw"] = choice
        return ToolChoice(mode="required")
    raise InvalidParameters(f"Invalid value for 'tool_choice.type': '{kind}'.", param="tool_choice.type")


# --- messages -------------------------------------------------------------------------------------------


def _decode_message(raw: Any, param: str, req: CanonicalRequest) -> None:
    msg = as_object(raw, param)
    role = require_str(msg, "role", f"{param}.role")
    if role in ("system", "developer"):
        _decode_system(msg, role, param, req)
    elif role == "user":
        req.messages.append(_decode_user(msg, param))
    elif role == "assistant":
        req.messages.append(_decode_assistant(msg, param))
    elif role == "tool":
        req.messages.append(_decode_tool(msg, param))
    else:
        raise InvalidParameters(
            f"Invalid value for '{param}.role': '{role}'. Supported values are: 'system', 'developer', "
            "'user', 'assistant' and 'tool'.",
            param=f"{param}.role",
        )


def _message_extras(msg: dict[str, Any], known: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in msg.items() if k not in known}


def _decode_system(msg: dict[str, Any], role: str, param: str, req: CanonicalRequest) -> None:
    content = require(msg, "content", f"{param}.content")
    group = len(req.system)  # grows with every system message, so it tells them apart
    hint: dict[str, Any] = {"_role": role, "_group": group}
    name = opt_str(msg, "name", f"{param}.name")
    if name is not None:
        hint["_name"] = name
    if isinstance(content, str):
        req.system.append(TextPart(text=content, extras=hint))
        return
    items = as_list(content, f"{param}.content")
    if not items:
        raise InvalidParameters(f"'{param}.content' must not be empty.", param=f"{param}.content")
    for j, item in enumerate(items):
        part = _decode_text_part(item, f"{param}.content[{j}]")
        req.system.append(TextPart(text=part.text, extras={**part.extras, **hint, "_array": True}))


def _decode_text_part(raw: Any, param: str) -> TextPart:
    part = as_object(raw, param)
    kind = require_str(part, "type", f"{param}.type")
    if kind != "text":
        raise InvalidParameters(
            f"Invalid value for '{param}.type': '{kind}'; only 'text' is supported here.", param=f"{param}.type"
        )
    return TextPart(text=require_str(part, "text", f"{param}.text"), extras=_message_extras(part, ("type", "text")))


def _decode_user(msg: dict[str, Any], param: str) -> Message:
    content = require(msg, "content", f"{param}.content")
    extras = _message_extras(msg, ("role", "content", "name"))
    if isinstance(content, str):
        parts: list[InputPart] = [TextPart(text=content)]
    else:
        items = as_list(content, f"{param}.content")
        if not items:
            raise InvalidParameters(f"'{param}.content' must not be empty.", param=f"{param}.content")
        extras["_array"] = True
        parts = []
        for j, item in enumerate(items):
            part = _decode_user_part(item, f"{param}.content[{j}]")
            if part is not None:
                parts.append(part)
    return Message(role="user", parts=parts, name=opt_str(msg, "name", f"{param}.name"), extras=extras)


def _decode_user_part(raw: Any, param: str) -> InputPart | None:
    """One user content part; None for a part the interface says to ignore (a local file path)."""
    part = as_object(raw, param)
    kind = require_str(part, "type", f"{param}.type")
    if kind == "text":
        return _decode_text_part(part, param)
    if kind == "image_url":
        return _decode_image(part, param)
    if kind == "file":
        return _decode_file(part, param)
    if kind == "input_audio":
        return _decode_audio(part, param)
    if kind == "video_url":
        raise InvalidParameters(
            f"Invalid value for '{param}.type': 'video_url'. Pass video as a 'file' part with "
            "'file.file_id' and 'file.format'.",
            param=f"{param}.type",
        )
    raise InvalidParameters(
        f"Invalid value for '{param}.type': '{kind}'. Supported values are: 'text', 'image_url', "
        "'file' and 'input_audio'.",
        param=f"{param}.type",
    )


def _decode_image(part: dict[str, Any], param: str) -> ImagePart | None:
    image = as_object(require(part, "image_url", f"{param}.image_url"), f"{param}.image_url")
    url_param = f"{param}.image_url.url"
    url = require_str(image, "url", url_param, non_empty=True)
    detail = opt_str(image, "detail", f"{param}.image_url.detail")
    if detail is not None and detail not in ("auto", "low", "high"):
        raise InvalidParameters(
            f"Invalid value for '{param}.image_url.detail': '{detail}'.", param=f"{param}.image_url.detail"
        )
    extras = _message_extras(part, ("type", "image_url"))
    extras.update({f"_image.{k}": v for k, v in image.items() if k not in ("url", "detail")})
    ref = media_reference(url, url_param)
    if ref is None:
        return None
    return ImagePart(url=ref.url, data=ref.data, media_type=ref.media_type, detail=detail, extras=extras)


def _decode_file(part: dict[str, Any], param: str) -> FilePart | None:
    fp = f"{param}.file"
    file = as_object(require(part, "file", fp), fp)
    file_id = opt_str(file, "file_id", f"{fp}.file_id")
    file_data = opt_str(file, "file_data", f"{fp}.file_data")
    filename = opt_str(file, "filename", f"{fp}.filename")
    fmt = opt_str(file, "format", f"{fp}.format")
    if fmt is not None and "/" not in fmt:
        raise InvalidParameters(
            f"Invalid value for '{fp}.format': '{fmt}'; expected a MIME type such as 'video/mp4'.",
            param=f"{fp}.format",
        )
    extras = _message_extras(part, ("type", "file"))
    extras.update({f"_file.{k}": v for k, v in file.items() if k not in ("file_id", "file_data", "filename", "format")})
    if file_id is not None:
        extras["_field"] = "file_id"
        source, source_param = file_id, f"{fp}.file_id"
    elif file_data is not None:
        extras["_field"] = "file_data"
        source, source_param = file_data, f"{fp}.file_data"
    else:
        raise InvalidParameters(f"Missing required parameter: '{fp}.file_id'.", param=f"{fp}.file_id")
    if fmt is not None:
        extras["_format"] = True
    ref = media_reference(source, source_param)
    if ref is not None:
        return FilePart(url=ref.url, data=ref.data, media_type=fmt or ref.media_type, filename=filename, extras=extras)
    if file_data is not None and file_id is None:
        # OpenAI also accepts bare base64 in file_data.
        check_inline_media(source, source_param)
        extras["_bare"] = True
        return FilePart(data=source, media_type=fmt, filename=filename, extras=extras)
    return None  # a local path: ignored, as the interface says


def _decode_audio(part: dict[str, Any], param: str) -> AudioPart:
    ap = f"{param}.input_audio"
    audio = as_object(require(part, "input_audio", ap), ap)
    data = require_str(audio, "data", f"{ap}.data", non_empty=True)
    fmt = require_str(audio, "format", f"{ap}.format")
    if fmt not in _AUDIO_FORMATS:
        raise InvalidParameters(
            f"Invalid value for '{ap}.format': '{fmt}'. Supported values are: 'wav' and 'mp3'.", param=f"{ap}.format"
        )
    if data.startswith("data:") or is_remote_url(data):
        raise InvalidParameters(
            f"Invalid value for '{ap}.data': audio is accepted inline only, as raw base64 (no URL, no data: prefix).",
            param=f"{ap}.data",
        )
    check_inline_media(data, f"{ap}.data")
    return AudioPart(data=data, format=fmt, extras=_message_extras(part, ("type", "input_audio")))


def _decode_assistant(msg: dict[str, Any], param: str) -> Message:
    extras = _message_extras(msg, ("role", "content", "name", "refusal", "tool_calls"))
    parts: list[InputPart] = []
    content = msg.get("content")
    if "content" in msg and content is None:
        extras["_content_null"] = True
    if isinstance(content, str):
        parts.append(TextPart(text=content))
    elif content is not None:
        items = as_list(content, f"{param}.content")
        extras["_array"] = True
        for j, item in enumerate(items):
            pp = f"{param}.content[{j}]"
            obj = as_object(item, pp)
            kind = require_str(obj, "type", f"{pp}.type")
            if kind == "refusal":
                parts.append(
                    RefusalPart(text=require_str(obj, "refusal", f"{pp}.refusal"), extras={"_in_content": True})
                )
            else:
                parts.append(_decode_text_part(obj, pp))
    refusal = opt_str(msg, "refusal", f"{param}.refusal")
    if refusal is not None:
        parts.append(RefusalPart(text=refusal))
    elif "refusal" in msg:
        extras["_refusal_null"] = True
    calls = opt_list(msg, "tool_calls", f"{param}.tool_calls")
    for k, raw in enumerate(calls or []):
        parts.append(_decode_tool_call(raw, f"{param}.tool_calls[{k}]"))
    if not parts and not extras.get("function_call") and not extras.get("audio"):
        raise InvalidParameters(
            f"Missing required parameter: '{param}.content' (an assistant message needs content or tool_calls).",
            param=f"{param}.content",
        )
    return Message(role="assistant", parts=parts, name=opt_str(msg, "name", f"{param}.name"), extras=extras)


def _decode_tool_call(raw: Any, param: str) -> ToolCallPart:
    call = as_object(raw, param)
    kind = opt_str(call, "type", f"{param}.type") or "function"
    if kind != "function":
        raise InvalidParameters(
            f"Invalid value for '{param}.type': '{kind}'; only 'function' tool calls are supported.",
            param=f"{param}.type",
        )
    fn = as_object(require(call, "function", f"{param}.function"), f"{param}.function")
    return ToolCallPart(
        id=require_str(call, "id", f"{param}.id"),
        name=require_str(fn, "name", f"{param}.function.name"),
        arguments=require_str(fn, "arguments", f"{param}.function.arguments"),
    )


def _decode_tool(msg: dict[str, Any], param: str) -> Message:
    call_id = require_str(msg, "tool_call_id", f"{param}.tool_call_id")
    content = require(msg, "content", f"{param}.content")
    result: str | tuple[TextPart | ImagePart, ...]
    if isinstance(content, str):
        result = content
    else:
        items = as_list(content, f"{param}.content")
        result = tuple(_decode_text_part(item, f"{param}.content[{j}]") for j, item in enumerate(items))
    part = ToolResultPart(tool_call_id=call_id, content=result)
    extras = _message_extras(msg, ("role", "content", "tool_call_id"))
    return Message(role="tool", parts=[part], extras=extras)
