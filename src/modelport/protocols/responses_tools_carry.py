"""A Responses client's non-function tools, for an upstream of another protocol (docs/api/translation.md).

- ``namespace`` tools (Codex groups tools under a namespace) are translated: their function tools are
  offered as plain function tools (a call comes back under the function's own name).
- ``custom`` (free-form input), ``local_shell``, ``shell`` and ``apply_patch`` tools need call items only
  the Responses API has: refused with a 400 naming the tool, never silently dropped.
- Hosted tools the upstream runs itself (``web_search``, ``file_search``, ``code_interpreter``, MCP, ...)
  are not offered to another upstream; the model answers without them.
"""

from __future__ import annotations

from typing import Any

from modelport.core.messages import CanonicalRequest, ToolSpec
from modelport.errors import InvalidParameters

_SOURCE = "openai_responses"
REFUSED_TOOLS = frozenset({"custom", "local_shell", "shell", "apply_patch"})
_UPSTREAM_NAMES = {"openai_chat": "Chat Completions", "anthropic_messages": "Anthropic Messages"}


def carried_tools(req: CanonicalRequest, target: str) -> list[ToolSpec]:
    """Function tools to add for an upstream speaking `target`; raises `InvalidParameters` for tools that
    cannot be expressed there."""
    if req.source_protocol != _SOURCE:
        return []
    out: list[ToolSpec] = []
    for position, tool in req.extras.get("_other_tools", []):
        kind = tool.get("type")
        if kind == "namespace":
            out.extend(_namespace_functions(tool))
        elif kind in REFUSED_TOOLS:
            raise InvalidParameters(
                f"Invalid value for 'tools[{position}].type': '{kind}' tools cannot be used with this model, whose "
                f"upstream speaks {_UPSTREAM_NAMES.get(target, target)}; declare the tool as a 'function' tool.",
                param=f"tools[{position}].type",
            )
    return out


def _namespace_functions(tool: dict[str, Any]) -> list[ToolSpec]:
    inner = tool.get("tools")
    out: list[ToolSpec] = []
    for fn in inner if isinstance(inner, list) else []:
        if not isinstance(fn, dict) or fn.get("type") != "function" or not isinstance(fn.get("name"), str):
            continue
        parameters = fn.get("parameters")
        description = fn.get("description")
        out.append(
            ToolSpec(
                name=fn["name"],
                description=description if isinstance(description, str) else None,
                parameters=parameters if isinstance(parameters, dict) else None,
                strict=fn["strict"] if isinstance(fn.get("strict"), bool) else None,
            )
        )
    return out
