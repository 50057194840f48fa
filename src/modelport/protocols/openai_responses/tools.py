"""Responses ``tools`` / ``tool_choice`` ↔ canonical `ToolSpec` / `ToolChoice`.

Function tools are flat on Responses (``{type: function, name, description, parameters, strict}``),
unlike Chat's nested ``function`` object. Hosted tools (``web_search``, ``file_search``, MCP, ...) have no
canonical form: they are kept as shape hints so a Responses upstream still gets them, and other
upstreams never see them.
"""

from __future__ import annotations

from typing import Any

from modelport.core.messages import CanonicalRequest, ToolChoice, ToolSpec
from modelport.core.validate import as_object, opt_bool, opt_list, opt_object, opt_str, require_str
from modelport.errors import InvalidParameters

_FUNCTION_KNOWN = ("type", "name", "description", "parameters", "strict")
# Hosted-tool choices: {"type": <tool type>} forces that hosted tool.
_HOSTED_CHOICES = frozenset(
    {
        "file_search",
        "web_search_preview",
        "web_search_preview_2025_03_11",
        "computer",
        "computer_use",
        "computer_use_preview",
        "image_generation",
        "code_interpreter",
        "mcp",
        "custom",
        "apply_patch",
        "shell",
        "programmatic_tool_calling",
    }
)


def decode_tools(body: dict[str, Any], req: CanonicalRequest) -> None:
    """Fill `req.tools`; hosted tools go to the ``_other_tools`` hint as ``[position, tool]`` pairs."""
    others: list[list[Any]] = []
    for i, raw in enumerate(opt_list(body, "tools", "tools") or []):
        param = f"tools[{i}]"
        tool = as_object(raw, param)
        kind = require_str(tool, "type", f"{param}.type")
        if kind != "function":
            others.append([i, tool])
            continue
        req.tools.append(
            ToolSpec(
                name=require_str(tool, "name", f"{param}.name", non_empty=True),
                description=opt_str(tool, "description", f"{param}.description"),
                parameters=opt_object(tool, "parameters", f"{param}.parameters"),
                strict=opt_bool(tool, "strict", f"{param}.strict"),
                extras={k: v for k, v in tool.items() if k not in _FUNCTION_KNOWN},
            )
        )
    if others:
        req.extras["_other_tools"] = others
    req.tool_choice = decode_tool_choice(body.get("tool_choice"), req)
    req.parallel_tool_calls = opt_bool(body, "parallel_tool_calls", "parallel_tool_calls")


def decode_tool_choice(value: Any, req: CanonicalRequest) -> ToolChoice | None:
    if value is None:
        return None
    if isinstance(value, str):
        if value == "auto":
            return ToolChoice(mode="auto")
        if value == "none":
            return ToolChoice(mode="none")
        if value == "required":
            return ToolChoice(mode="required")
        raise InvalidParameters(
            f"Invalid value for 'tool_choice': '{value}'. Supported values are: 'none', 'auto' and 'required'.",
            param="tool_choice",
        )
    choice = as_object(value, "tool_choice")
    kind = require_str(choice, "type", "tool_choice.type")
    if kind == "function":
        return ToolChoice(mode="named", name=require_str(choice, "name", "tool_choice.name", non_empty=True))
    if kind == "allowed_tools":
        mode = opt_str(choice, "mode", "tool_choice.mode") or "auto"
        if mode not in ("auto", "required"):
            raise InvalidParameters(f"Invalid value for 'tool_choice.mode': '{mode}'.", param="tool_choice.mode")
        req.extras["_tool_choice_raw"] = choice
        return ToolChoice(mode="required" if mode == "required" else "auto")
    if kind in _HOSTED_CHOICES:
        # Forces a hosted tool: only a Responses upstream can honour it; others see "auto".
        req.extras["_tool_choice_raw"] = choice
        return ToolChoice(mode="auto")
    raise InvalidParameters(f"Invalid value for 'tool_choice.type': '{kind}'.", param="tool_choice.type")


def tool_to_wire(tool: ToolSpec, same: bool) -> dict[str, Any]:
    """A flat function tool. Responses defaults ``strict`` to true, which rejects non-strict schemas, so a
    tool from another protocol without an explicit `strict` is sent with ``strict: false``."""
    out: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    if same:
        if tool.parameters is not None:
            out["parameters"] = tool.parameters
        if tool.strict is not None:
            out["strict"] = tool.strict
        out.update(tool.extras)
        return out
    out["parameters"] = tool.parameters if tool.parameters is not None else {"type": "object", "properties": {}}
    out["strict"] = bool(tool.strict)
    return out


def tools_to_wire(req: CanonicalRequest, same: bool) -> list[dict[str, Any]]:
    """Function tools, with a same-protocol request's hosted tools put back at their positions."""
    tools = [tool_to_wire(t, same) for t in req.tools]
    if same:
        for position, raw in req.extras.get("_other_tools", []):
            tools.insert(min(position, len(tools)), raw)
    return tools


def tool_choice_to_wire(choice: ToolChoice) -> str | dict[str, Any]:
    if choice.mode == "named":
        return {"type": "function", "name": choice.name or ""}
    return choice.mode
