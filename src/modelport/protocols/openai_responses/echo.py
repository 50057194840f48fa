"""The request-echo fields of a Response object (``instructions``, ``tools``, ``temperature``, ...).

The real API repeats the effective request settings in every Response (and in the ``response`` of the
stream's lifecycle events). When the gateway passes the client's `CanonicalRequest` they are echoed from
it; otherwise the API's defaults are shown. ``store`` is false unless the gateway keeps the response (it
sets ``_stored`` on the request, ``_previous_response_id`` when the request continued a stored one and
``_conversation_id`` when it continued a conversation:
docs/api/stored-responses.md).
"""

from __future__ import annotations

import copy
from typing import Any

from modelport.core.messages import CanonicalRequest
from modelport.protocols.openai_responses.request_decode import PROTOCOL
from modelport.protocols.openai_responses.text_format import text_to_wire
from modelport.protocols.openai_responses.tools import tool_choice_to_wire, tools_to_wire

# Order and defaults as in the recorded responses.
DEFAULTS: dict[str, Any] = {
    "background": False,
    "instructions": None,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "parallel_tool_calls": True,
    "previous_response_id": None,
    "prompt_cache_key": None,
    "reasoning": {"effort": None, "summary": None},
    "safety_identifier": None,
    "service_tier": "default",
    "store": False,
    "temperature": 1.0,
    "text": {"format": {"type": "text"}, "verbosity": "medium"},
    "tool_choice": "auto",
    "tools": [],
    "top_logprobs": 0,
    "top_p": 1.0,
    "truncation": "disabled",
    "metadata": {},
}

# Request fields kept in `extras` that the API echoes as they were sent.
_ECHOED_EXTRAS = (
    "background",
    "max_tool_calls",
    "previous_response_id",
    "prompt_cache_key",
    "safety_identifier",
    "service_tier",
    "top_logprobs",
    "truncation",
)


def echo_fields(req: CanonicalRequest | None) -> dict[str, Any]:
    """The echo fields for a response to `req` (defaults when None)."""
    out = copy.deepcopy(DEFAULTS)
    if req is None:
        return out
    same = req.source_protocol == PROTOCOL
    if same:
        own = [p.text for p in req.system if p.extras.get("_instructions")]
        out["instructions"] = "\n\n".join(own) if own else ("" if req.extras.get("_instructions_empty") else None)
        out.update({k: req.extras[k] for k in _ECHOED_EXTRAS if req.extras.get(k) is not None})
        if req.extras.get("_stored"):
            out["store"] = True
        if req.extras.get("_previous_response_id") is not None:
            out["previous_response_id"] = req.extras["_previous_response_id"]
        if req.extras.get("_conversation_id") is not None:
            out["conversation"] = {"id": req.extras["_conversation_id"]}
    else:
        out["instructions"] = req.system_text or None
    out["max_output_tokens"] = req.max_output_tokens
    if req.parallel_tool_calls is not None:
        out["parallel_tool_calls"] = req.parallel_tool_calls
    if req.reasoning is not None:
        out["reasoning"] = {"effort": req.reasoning.effort, "summary": req.reasoning.summary}
    if req.temperature is not None:
        out["temperature"] = req.temperature
    if req.top_p is not None:
        out["top_p"] = req.top_p
    out["text"] = {**out["text"], **(text_to_wire(req, same) or {})}
    if same and "_tool_choice_raw" in req.extras:
        out["tool_choice"] = req.extras["_tool_choice_raw"]
    elif req.tool_choice is not None:
        out["tool_choice"] = tool_choice_to_wire(req.tool_choice)
    tools = tools_to_wire(req, same)
    for tool in tools:
        if tool.get("type") == "function":
            # A response always shows a function tool's effective `strict` (Responses defaults it to true)
            # and its parameters, even when the request left them out.
            tool.setdefault("strict", True)
            tool.setdefault("parameters", None)
    out["tools"] = tools
    if req.metadata is not None:
        out["metadata"] = dict(req.metadata)
    if req.user is not None:
        out["user"] = req.user
    return out
