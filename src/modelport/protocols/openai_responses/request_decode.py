"""Responses request body (``POST /v1/responses``) → `CanonicalRequest`, with validation.

Every rejection is an `InvalidParameters` whose `param` names the bad field (``input[1].content[0].type``).
Fields without a canonical slot stay in `extras` under their wire names (``store``, ``include``,
``service_tier``, ``prompt_cache_key``, ...), so a Responses upstream gets them back.

``previous_response_id`` never reaches this decoder from the gateway: it resolves a stored response's
items into `input` first (`gateway/stored_responses.py`), so every upstream kind gets the earlier turns. A
body decoded elsewhere keeps the field in `extras`.
"""

from __future__ import annotations

from typing import Any

from modelport.catalog_spec import OUTPUT_TOKENS_CEILING
from modelport.core.messages import CanonicalRequest, ReasoningConfig
from modelport.core.parts import TextPart
from modelport.core.validate import (
    as_object,
    as_str,
    opt_bool,
    opt_int,
    opt_number,
    opt_object,
    opt_str,
    require,
    require_str,
)
from modelport.errors import InvalidParameters
from modelport.protocols.openai_responses.input_decode import decode_input
from modelport.protocols.openai_responses.text_format import decode_text
from modelport.protocols.openai_responses.tools import decode_tools

PROTOCOL = "openai_responses"

# Top-level fields of the other two protocols: mixing them in is a client error.
_FOREIGN_FIELDS = {
    "messages": "'input'",
    "max_tokens": "'max_output_tokens'",
    "max_completion_tokens": "'max_output_tokens'",
    "response_format": "'text.format'",
    "system": "'instructions'",
    "stop_sequences": None,
}

_CANONICAL_FIELDS = frozenset(
    {
        "model",
        "input",
        "instructions",
        "stream",
        "max_output_tokens",
        "temperature",
        "top_p",
        "tools",
        "tool_choice",
        "parallel_tool_calls",
        "reasoning",
        "text",
        "user",
        "metadata",
    }
)

# The API's documented minimum for max_output_tokens.
MIN_OUTPUT_TOKENS = 16


def decode_request(body: dict[str, Any]) -> CanonicalRequest:
    body = as_object(body, "body")
    for key, instead in _FOREIGN_FIELDS.items():
        if key in body:
            hint = f"; the Responses API uses {instead}" if instead else ""
            raise InvalidParameters(f"Unrecognized request argument supplied: '{key}'{hint}.", param=key)
    model = require_str(body, "model", "model", non_empty=True)
    req = CanonicalRequest(model=model, messages=[], source_protocol=PROTOCOL)
    _decode_instructions(body, req)
    decode_input(require(body, "input", "input"), req)
    _decode_generation(body, req)
    decode_tools(body, req)
    decode_text(body.get("text"), req)
    req.extras.update({k: v for k, v in body.items() if k not in _CANONICAL_FIELDS})
    return req


def _decode_instructions(body: dict[str, Any], req: CanonicalRequest) -> None:
    instructions = opt_str(body, "instructions", "instructions")
    if instructions:
        req.system.append(TextPart(text=instructions, extras={"_instructions": True}))
    elif instructions is not None:
        req.extras["_instructions_empty"] = True  # "" carries no instruction; re-sent only to Responses


def _decode_generation(body: dict[str, Any], req: CanonicalRequest) -> None:
    stream = opt_bool(body, "stream", "stream")
    req.stream = bool(stream)
    if stream is False:
        req.extras["_stream_false"] = True
    # Usage always arrives in `response.completed`; there is no opt-in as in Chat.
    req.include_usage = True
    req.max_output_tokens = opt_int(
        body, "max_output_tokens", "max_output_tokens", minimum=MIN_OUTPUT_TOKENS, maximum=OUTPUT_TOKENS_CEILING
    )
    req.temperature = opt_number(body, "temperature", "temperature", minimum=0, maximum=2)
    req.top_p = opt_number(body, "top_p", "top_p", minimum=0, maximum=1)
    req.user = opt_str(body, "user", "user")
    metadata = opt_object(body, "metadata", "metadata")
    if metadata is not None:
        for key, value in metadata.items():
            as_str(value, f"metadata.{key}")
        req.metadata = dict(metadata)
    reasoning = opt_object(body, "reasoning", "reasoning")
    if reasoning is not None:
        effort = opt_str(reasoning, "effort", "reasoning.effort")
        summary = opt_str(reasoning, "summary", "reasoning.summary") or opt_str(
            reasoning, "generate_summary", "reasoning.generate_summary"
        )
        req.reasoning = ReasoningConfig(effort=effort, summary=summary, enabled=effort != "none")
        req.extras["_reasoning"] = reasoning
