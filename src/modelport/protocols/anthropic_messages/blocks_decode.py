"""Content blocks of a client's Messages request → canonical parts, with validation.

Every rejection names the offending field (``messages[0].content[1].source.data``). Block fields without
a canonical slot stay in the part's `extras` under their wire names (``cache_control``, ``citations``,
``title``...). Keys starting with ``_`` are shape hints for this protocol's encoder, never wire fields.
"""

from __future__ import annotations

import base64
from typing import Any

from modelport.core.media import (
    check_inline_media,
    check_inline_size,
    is_provider_file_id,
    is_remote_url,
    parse_data_url,
)
from modelport.core.parts import (
    FilePart,
    ImagePart,
    InputPart,
    OpaquePart,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from modelport.core.validate import as_list, as_object, as_str, opt_bool, opt_str, require, require_str
from modelport.errors import InvalidParameters
from modelport.protocols.anthropic_messages.content import PROTOCOL, arguments_from_input
from modelport.protocols.reasoning_carry import unwrap_openai

IMAGE_MEDIA_TYPES = ("image/jpeg", "image/png", "image/gif", "image/webp")


def _rest(block: dict[str, Any], *known: str) -> dict[str, Any]:
    return {k: v for k, v in block.items() if k != "type" and k not in known}


def _reject_file_id(param: str) -> InvalidParameters:
    return InvalidParameters(
        f"Invalid '{param}': provider file ids are not supported; pass a public HTTPS URL or inline base64 data.",
        param=param,
    )


def decode_content(value: Any, param: str) -> list[InputPart]:
    """A message's ``content``: a string (shorthand for one text block) or a list of blocks."""
    if isinstance(value, str):
        return [TextPart(text=value)]
    parts: list[InputPart] = []
    for j, raw in enumerate(as_list(value, param)):
        part = decode_block(raw, f"{param}[{j}]")
        if part is not None:
            parts.append(part)
    return parts


def decode_block(raw: Any, param: str) -> InputPart | None:
    """One block; None when the interface says to ignore it (an image at a local filesystem path)."""
    block = as_object(raw, param)
    kind = require_str(block, "type", f"{param}.type")
    if kind == "text":
        return TextPart(text=require_str(block, "text", f"{param}.text"), extras=_rest(block, "text"))
    if kind == "image":
        return decode_image(block, param)
    if kind == "document":
        return _decode_document(block, param)
    if kind == "tool_use":
        tool_input = as_object(require(block, "input", f"{param}.input"), f"{param}.input")
        return ToolCallPart(
            id=require_str(block, "id", f"{param}.id", non_empty=True),
            name=require_str(block, "name", f"{param}.name", non_empty=True),
            arguments=arguments_from_input(tool_input),
            extras=_rest(block, "id", "name", "input"),
        )
    if kind == "tool_result":
        return _decode_tool_result(block, param)
    if kind == "thinking":
        text = require_str(block, "thinking", f"{param}.thinking")
        signature = opt_str(block, "signature", f"{param}.signature")
        carried = unwrap_openai(signature)
        if carried is not None:
            # An OpenAI reasoning item we handed out as this block's signature: it goes back as that item.
            return ReasoningPart(text=text, id=carried.id, encrypted_content=carried.encrypted_content)
        return ReasoningPart(text=text, signature=signature, extras=_rest(block, "thinking", "signature"))
    if kind == "redacted_thinking":
        return ReasoningPart(redacted=require_str(block, "data", f"{param}.data"), extras=_rest(block, "data"))
    # Server tool calls and results, search results, compaction, ...: only an Anthropic upstream knows them.
    return _opaque(block, param)


def _opaque(block: dict[str, Any], param: str) -> OpaquePart:
    """Kept verbatim, but a reference to a file in the upstream account (``container_upload``,
    ``source.type: file``) is refused like any provider file id: it is not the client's to name."""
    if "file_id" in block:
        raise _reject_file_id(f"{param}.file_id")
    source = block.get("source")
    if isinstance(source, dict) and (source.get("type") == "file" or "file_id" in source):
        raise _reject_file_id(f"{param}.source")
    return OpaquePart(protocol=PROTOCOL, data=dict(block))


def decode_image(block: dict[str, Any], param: str) -> ImagePart | None:
    source = as_object(require(block, "source", f"{param}.source"), f"{param}.source")
    kind = require_str(source, "type", f"{param}.source.type")
    extras = _rest(block, "source")
    if kind == "base64":
        media_type = require_str(source, "media_type", f"{param}.source.media_type")
        if media_type not in IMAGE_MEDIA_TYPES:
            raise InvalidParameters(
                f"Invalid '{param}.source.media_type': expected one of {', '.join(IMAGE_MEDIA_TYPES)}.",
                param=f"{param}.source.media_type",
            )
        data = require_str(source, "data", f"{param}.source.data")
        check_inline_media(data, f"{param}.source.data")
        return ImagePart(data=data, media_type=media_type, extras=extras)
    if kind == "url":
        url = require_str(source, "url", f"{param}.source.url", non_empty=True)
        if is_provider_file_id(url):
            raise _reject_file_id(f"{param}.source.url")
        inline = parse_data_url(url)
        if inline is not None:
            check_inline_media(inline[1], f"{param}.source.url")
            return ImagePart(data=inline[1], media_type=inline[0], extras=extras)
        if not is_remote_url(url):
            return None  # a local filesystem path: ignored, as the interface says
        return ImagePart(url=url, extras=extras)
    if kind == "file":
        raise _reject_file_id(f"{param}.source")
    raise InvalidParameters(f"Invalid '{param}.source.type': expected 'base64' or 'url'.", param=f"{param}.source.type")


def _decode_document(block: dict[str, Any], param: str) -> InputPart | None:
    source = as_object(require(block, "source", f"{param}.source"), f"{param}.source")
    kind = require_str(source, "type", f"{param}.source.type")
    extras = _rest(block, "source")
    title = block.get("title") if isinstance(block.get("title"), str) else None
    if kind == "base64":
        media_type = require_str(source, "media_type", f"{param}.source.media_type")
        data = require_str(source, "data", f"{param}.source.data")
        check_inline_media(data, f"{param}.source.data")
        return FilePart(data=data, media_type=media_type, filename=title, extras=extras)
    if kind == "url":
        url = require_str(source, "url", f"{param}.source.url", non_empty=True)
        if is_provider_file_id(url):
            raise _reject_file_id(f"{param}.source.url")
        inline = parse_data_url(url)
        if inline is not None:
            check_inline_media(inline[1], f"{param}.source.url")
            return FilePart(data=inline[1], media_type=inline[0], filename=title, extras=extras)
        if not is_remote_url(url):
            return None
        return FilePart(url=url, filename=title, extras=extras)
    if kind == "text":
        text = require_str(source, "data", f"{param}.source.data")
        data = base64.b64encode(text.encode()).decode()
        check_inline_size(data, f"{param}.source.data")
        # Canonically a text/plain file; `_text_source` lets our encoder restore the plain-text form.
        return FilePart(data=data, media_type="text/plain", filename=title, extras={**extras, "_text_source": True})
    if kind == "file":
        raise _reject_file_id(f"{param}.source")
    if kind == "content":
        # A document made of blocks: no canonical form, but its blocks obey the same rules.
        if isinstance(source.get("content"), list):
            for j, item in enumerate(source["content"]):
                decode_block(item, f"{param}.source.content[{j}]")
        return OpaquePart(protocol=PROTOCOL, data=dict(block))
    raise InvalidParameters(
        f"Invalid '{param}.source.type': expected 'base64', 'url', 'text' or 'content'.",
        param=f"{param}.source.type",
    )


def _decode_tool_result(block: dict[str, Any], param: str) -> ToolResultPart:
    tool_use_id = require_str(block, "tool_use_id", f"{param}.tool_use_id", non_empty=True)
    is_error = bool(opt_bool(block, "is_error", f"{param}.is_error"))
    extras = _rest(block, "tool_use_id", "content", "is_error")
    if block.get("is_error") is False:
        extras["_is_error_false"] = True  # lets our encoder write an explicit `false` back
    raw = block.get("content")
    if raw is None or isinstance(raw, str):
        return ToolResultPart(tool_call_id=tool_use_id, content=raw or "", is_error=is_error, extras=extras)
    items: list[TextPart | ImagePart] = []
    faithful = True  # False when a block (document, search_result...) has no canonical form
    for j, item in enumerate(as_list(raw, f"{param}.content")):
        inner = as_object(item, f"{param}.content[{j}]")
        kind = as_str(require(inner, "type", f"{param}.content[{j}].type"), f"{param}.content[{j}].type")
        if kind == "text":
            items.append(
                TextPart(text=require_str(inner, "text", f"{param}.content[{j}].text"), extras=_rest(inner, "text"))
            )
        elif kind == "image":
            image = decode_image(inner, f"{param}.content[{j}]")
            if image is not None:
                items.append(image)
        else:
            decode_block(inner, f"{param}.content[{j}]")  # still validated (file ids, sizes)
            faithful = False
    if not faithful:
        extras["_content"] = raw  # only an Anthropic upstream gets the blocks we could not map
    return ToolResultPart(tool_call_id=tool_use_id, content=tuple(items), is_error=is_error, extras=extras)
