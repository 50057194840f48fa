"""Messages request body (``POST /v1/messages``) → `CanonicalRequest`, with validation.

Every rejection is an `InvalidParameters` whose `param` names the bad field. Fields without a canonical
slot (``top_k``, ``container``, ``mcp_servers``, top-level ``cache_control``, the raw ``thinking`` and
``metadata`` objects, ...) are kept in `extras` under their wire names so an Anthropic upstream gets them
back. Keys starting with ``_`` are shape hints for this protocol's encoder only.
"""

from __future__ import annotations

from typing import Any

from modelport.catalog_spec import OUTPUT_TOKENS_CEILING
from modelport.core.messages import (
    CanonicalRequest,
    Message,
    ReasoningConfig,
    ResponseFormat,
    ToolChoice,
    ToolChoiceMode,
    ToolSpec,
)
from modelport.core.parts import InputPart, TextPart
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
from modelport.protocols.anthropic_messages.blocks_decode import decode_content
from modelport.protocols.anthropic_messages.content import PROTOCOL

# Top-level fields of the other two protocols: mixing them is a client error.
_FOREIGN_FIELDS = {
    "input": "Responses",
    "instructions": "Responses",
    "previous_response_id": "Responses",
    "max_output_tokens": "Responses",
    "max_completion_tokens": "Chat Completions",
}

# Top-level fields mapped to canonical slots; everything else goes to `extras` verbatim.
_CANONICAL_FIELDS = {
    "model",
    "messages",
    "max_tokens",
    "system",
    "stop_sequences",
    "temperature",
    "top_p",
    "tools",
    "tool_choice",
    "stream",
}

_TOOL_CHOICES = ("auto", "any", "tool", "none")
_TOOL_CHOICE_MODES: dict[str, ToolChoiceMode] = {"auto": "auto", "any": "required", "none": "none"}

# The betas under which Anthropic takes `system` turns inside `messages`, spelled as Claude Code sends them
# (read from its 2.1.332 binary): the mid-conversation-system beta, and its `clear_at` extension, whose turns
# are system turns too. That release treats the first as generally available and no longer sends it (it
# answers a 400 naming the role by resending without system turns); older releases sent it.
MID_CONVERSATION_SYSTEM_BETA = "mid-conversation-system-2026-04-07"
MID_CONVERSATION_SYSTEM_BETAS = frozenset({MID_CONVERSATION_SYSTEM_BETA, "mid-conversation-system-clear-at-2026-08-21"})


def decode_request(body: dict[str, Any], *, system_turns: bool = False) -> CanonicalRequest:
    """A Messages body → the canonical request. `system_turns`: the client named the mid-conversation-system
    beta (`system_turns_allowed`), so `system` turns inside `messages` are accepted; otherwise the interface's
    rule holds (roles `user` and `assistant` only)."""
    body = as_object(body, "body")
    reject_foreign_fields(body, _FOREIGN_FIELDS, "Messages uses 'messages' and 'max_tokens'")
    model = require_str(body, "model", "model", non_empty=True)
    raw_messages = as_list(require(body, "messages", "messages"), "messages")
    if not raw_messages:
        raise InvalidParameters("'messages' must contain at least one message.", param="messages")
    require(body, "max_tokens", "max_tokens")
    req = CanonicalRequest(
        model=model,
        messages=[_decode_message(raw, f"messages[{i}]", system_turns) for i, raw in enumerate(raw_messages)],
        max_output_tokens=opt_int(body, "max_tokens", "max_tokens", minimum=1, maximum=OUTPUT_TOKENS_CEILING),
        source_protocol=PROTOCOL,
    )
    req.extras.update({k: v for k, v in body.items() if k not in _CANONICAL_FIELDS})
    _decode_system(body.get("system"), req)
    _decode_generation(body, req)
    _decode_tools(body, req)
    _decode_tool_choice(body, req)
    _decode_thinking(body, req)
    return req


def _decode_message(raw: Any, param: str, system_turns: bool) -> Message:
    msg = as_object(raw, param)
    role = require_str(msg, "role", f"{param}.role")
    if role not in ("user", "assistant", "system") or (role == "system" and not system_turns):
        # Worded so Claude Code recognises the refusal and resends without its system turns.
        hint = (
            f" ('system' turns need the anthropic-beta header {MID_CONVERSATION_SYSTEM_BETA})"
            if role == "system"
            else ""
        )
        raise InvalidParameters(
            f"Invalid '{param}.role': Input should be 'user' or 'assistant', not '{role}'{hint}.",
            param=f"{param}.role",
        )
    content = require(msg, "content", f"{param}.content")
    extras = {k: v for k, v in msg.items() if k not in ("role", "content")}
    if isinstance(content, str):
        extras["_string"] = True
    if role == "system":
        # A mid-conversation system turn (the `mid-conversation-system` beta Claude Code sends): text only.
        return Message(role="system", parts=_system_turn(content, f"{param}.content"), extras=extras)
    return Message(
        role="user" if role == "user" else "assistant", parts=decode_content(content, f"{param}.content"), extras=extras
    )


def system_turns_allowed(anthropic_beta: str | None) -> bool:
    """The `anthropic-beta` header names the mid-conversation-system beta (any of its spellings)."""
    if not anthropic_beta:
        return False
    return any(name.strip() in MID_CONVERSATION_SYSTEM_BETAS for name in anthropic_beta.split(","))


def _system_turn(content: Any, param: str) -> list[InputPart]:
    if isinstance(content, str):
        return [TextPart(text=content)]
    parts = decode_content(content, param)
    for i, part in enumerate(parts):
        if not isinstance(part, TextPart):
            raise InvalidParameters(
                f"Invalid '{param}[{i}].type': system messages take text blocks only.", param=f"{param}[{i}].type"
            )
    return parts


def _decode_system(value: Any, req: CanonicalRequest) -> None:
    if value is None:
        return
    if isinstance(value, str):
        req.system = [TextPart(text=value)] if value else []
        req.extras["_system_string"] = True
        return
    for i, raw in enumerate(as_list(value, "system")):
        block = as_object(raw, f"system[{i}]")
        kind = require_str(block, "type", f"system[{i}].type")
        if kind != "text":
            raise InvalidParameters(
                f"Invalid 'system[{i}].type': system content blocks must be of type 'text'.",
                param=f"system[{i}].type",
            )
        text = require_str(block, "text", f"system[{i}].text")
        req.system.append(TextPart(text=text, extras={k: v for k, v in block.items() if k not in ("type", "text")}))


def _decode_generation(body: dict[str, Any], req: CanonicalRequest) -> None:
    req.stream = bool(opt_bool(body, "stream", "stream"))
    req.temperature = opt_number(body, "temperature", "temperature", minimum=0, maximum=1)
    req.top_p = opt_number(body, "top_p", "top_p", minimum=0, maximum=1)
    opt_int(body, "top_k", "top_k", minimum=0)  # validated; carried in extras
    stops = opt_list(body, "stop_sequences", "stop_sequences") or []
    req.stop = [as_str(s, f"stop_sequences[{i}]") for i, s in enumerate(stops)]
    _decode_output_format(body, req)
    metadata = opt_object(body, "metadata", "metadata")
    if metadata is not None:
        # Anthropic's end-user id is the canonical `user` (Chat's `user`, Responses' `safety_identifier`).
        req.user = opt_str(metadata, "user_id", "metadata.user_id")


def _decode_output_format(body: dict[str, Any], req: CanonicalRequest) -> None:
    """``output_config.format`` (structured output): the canonical response format, so OpenAI upstreams get
    it as ``response_format`` / ``text.format`` (the raw object stays in extras for an Anthropic upstream)."""
    config = opt_object(body, "output_config", "output_config")
    fmt = opt_object(config, "format", "output_config.format") if config is not None else None
    if fmt is None:
        return
    if require_str(fmt, "type", "output_config.format.type") != "json_schema":
        return
    schema = as_object(require(fmt, "schema", "output_config.format.schema"), "output_config.format.schema")
    req.response_format = ResponseFormat(type="json_schema", name="output", schema=schema)


def _decode_tools(body: dict[str, Any], req: CanonicalRequest) -> None:
    server_tools: list[list[Any]] = []
    for i, raw in enumerate(opt_list(body, "tools", "tools") or []):
        tool = as_object(raw, f"tools[{i}]")
        kind = opt_str(tool, "type", f"tools[{i}].type")
        if kind not in (None, "custom") and "input_schema" not in tool:
            # A server tool (web_search_..., code_execution_..., bash_..., an MCP toolset): no canonical form.
            server_tools.append([i, tool])
            continue
        schema = as_object(require(tool, "input_schema", f"tools[{i}].input_schema"), f"tools[{i}].input_schema")
        req.tools.append(
            ToolSpec(
                name=require_str(tool, "name", f"tools[{i}].name", non_empty=True),
                description=opt_str(tool, "description", f"tools[{i}].description"),
                parameters=schema,
                strict=opt_bool(tool, "strict", f"tools[{i}].strict"),
                extras={k: v for k, v in tool.items() if k not in ("name", "description", "input_schema", "strict")},
            )
        )
    if server_tools:
        req.extras["_server_tools"] = server_tools


def _decode_tool_choice(body: dict[str, Any], req: CanonicalRequest) -> None:
    choice = opt_object(body, "tool_choice", "tool_choice")
    if choice is None:
        return
    kind = require_str(choice, "type", "tool_choice.type")
    if kind not in _TOOL_CHOICES:
        raise InvalidParameters(
            f"Invalid 'tool_choice.type': expected one of {', '.join(_TOOL_CHOICES)}.", param="tool_choice.type"
        )
    if kind == "tool":
        req.tool_choice = ToolChoice(mode="named", name=require_str(choice, "name", "tool_choice.name", non_empty=True))
    else:
        req.tool_choice = ToolChoice(mode=_TOOL_CHOICE_MODES[kind])
    disable = opt_bool(choice, "disable_parallel_tool_use", "tool_choice.disable_parallel_tool_use")
    if disable is not None:
        req.parallel_tool_calls = not disable


def _decode_thinking(body: dict[str, Any], req: CanonicalRequest) -> None:
    thinking = opt_object(body, "thinking", "thinking")
    if thinking is None:
        return
    kind = require_str(thinking, "type", "thinking.type")
    if kind == "enabled":
        require(thinking, "budget_tokens", "thinking.budget_tokens")
        budget = opt_int(
            thinking, "budget_tokens", "thinking.budget_tokens", minimum=1024, maximum=OUTPUT_TOKENS_CEILING
        )
        req.reasoning = ReasoningConfig(budget_tokens=budget)
    elif kind == "disabled":
        req.reasoning = ReasoningConfig(enabled=False)
    else:
        req.reasoning = ReasoningConfig()  # e.g. "adaptive": on, the model picks the budget
