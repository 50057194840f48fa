"""The vendors' documented request rules that coding agents depend on, as a fake upstream enforces them.

Each `check_*` returns a `VendorError` shaped like the vendor's own 400 (message, type, code, param), or
None when the request is one the vendor would accept. Rules checked:

- all three: no top-level field the vendor does not know; a tool call's arguments are valid JSON; every
  tool result answers a tool call made just before it, and every tool call gets its result.
- Anthropic Messages: `max_tokens` required; roles `user`/`assistant` (and `system` only with the
  `mid-conversation-system` beta); no empty text blocks; with thinking on, the assistant turn that made the
  pending tool calls starts with a thinking block, every thinking block's `signature` (and every
  `redacted_thinking` block's `data`) is one this upstream issued, and `budget_tokens` is at least 1024 and
  below `max_tokens`.
- OpenAI Responses: a function call made together with a reasoning item must be sent back with that
  reasoning item, whose `encrypted_content` must be one this upstream issued.

`Seal` signs and checks the opaque tokens (thinking signatures, encrypted reasoning) with a per-fake secret.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from dataclasses import dataclass
from typing import Any

ANTHROPIC_FIELDS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream", "temperature",
        "top_p", "top_k", "tools", "tool_choice", "thinking", "service_tier", "container", "mcp_servers",
        "context_management", "output_config", "output_format", "inference_geo",
    }
)  # fmt: skip
CHAT_FIELDS = frozenset(
    {
        "model", "messages", "stream", "stream_options", "max_tokens", "max_completion_tokens", "temperature",
        "top_p", "n", "stop", "presence_penalty", "frequency_penalty", "logit_bias", "logprobs", "top_logprobs",
        "user", "tools", "tool_choice", "parallel_tool_calls", "response_format", "seed", "service_tier",
        "store", "metadata", "reasoning_effort", "modalities", "audio", "prediction", "web_search_options",
        "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "verbosity",
    }
)  # fmt: skip
RESPONSES_FIELDS = frozenset(
    {
        "model", "input", "instructions", "stream", "stream_options", "max_output_tokens", "max_tool_calls",
        "temperature", "top_p", "tools", "tool_choice", "parallel_tool_calls", "reasoning", "text", "store",
        "include", "metadata", "previous_response_id", "conversation", "truncation", "user", "service_tier",
        "prompt", "prompt_cache_key", "prompt_cache_retention", "safety_identifier", "background",
        "top_logprobs", "client_metadata",
    }
)  # fmt: skip
ANTHROPIC_BLOCKS = frozenset(
    {
        "text", "image", "document", "search_result", "tool_use", "tool_result", "thinking", "redacted_thinking",
        "server_tool_use", "web_search_tool_result", "web_fetch_tool_result", "container_upload",
    }
)  # fmt: skip
RESPONSES_ITEMS = frozenset(
    {
        "message", "function_call", "function_call_output", "reasoning", "custom_tool_call",
        "custom_tool_call_output", "local_shell_call", "local_shell_call_output", "web_search_call",
        "item_reference", "compaction",
    }
)  # fmt: skip
THINKING_RULE = (
    "When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the "
    "lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from "
    "previous turns. To avoid this requirement, disable `thinking`."
)


@dataclass(frozen=True)
class VendorError:
    message: str
    param: str | None = None
    code: str | None = None
    status: int = 400
    type: str = "invalid_request_error"


class Seal:
    """Issues and verifies this fake's opaque tokens, like a vendor's signatures."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)

    def _mac(self, payload: bytes) -> str:
        return base64.urlsafe_b64encode(hmac.new(self._key, payload, hashlib.sha256).digest()).decode()

    def sign(self, payload: dict[str, Any]) -> str:
        raw = json.dumps(payload, sort_keys=True).encode()
        return base64.urlsafe_b64encode(raw).decode() + "." + self._mac(raw)

    def open(self, token: object) -> dict[str, Any] | None:
        if not isinstance(token, str) or "." not in token:
            return None
        head, mac = token.rsplit(".", 1)
        try:
            raw = base64.urlsafe_b64decode(head.encode())
        except ValueError:
            return None
        if not hmac.compare_digest(mac, self._mac(raw)):
            return None
        payload = json.loads(raw)
        return payload if isinstance(payload, dict) else None


def _bad_json(raw: object) -> bool:
    if not isinstance(raw, str):
        return True
    try:
        json.loads(raw)
    except ValueError:
        return True
    return False


def _unknown_field(body: dict[str, Any], known: frozenset[str]) -> str | None:
    return next((k for k in body if k not in known), None)


# ---------------------------------------------------------------- Anthropic Messages


def anthropic_thinking_on(body: dict[str, Any]) -> bool:
    thinking = body.get("thinking")
    return isinstance(thinking, dict) and thinking.get("type") in ("enabled", "adaptive")


def _blocks(content: object) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def check_anthropic(body: dict[str, Any], headers: dict[str, str], seal: Seal) -> VendorError | None:
    if (extra := _unknown_field(body, ANTHROPIC_FIELDS)) is not None:
        return VendorError(f"{extra}: Extra inputs are not permitted")
    max_tokens = body.get("max_tokens")
    if not isinstance(max_tokens, int) or max_tokens < 1:
        return VendorError("max_tokens: Field required")
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return VendorError("messages: at least one message is required")
    thinking_on = anthropic_thinking_on(body)
    if thinking_on and body["thinking"]["type"] == "enabled":
        budget = body["thinking"].get("budget_tokens")
        if not isinstance(budget, int) or budget < 1024:
            return VendorError("thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
        if budget >= max_tokens:
            return VendorError("`max_tokens` must be greater than `thinking.budget_tokens`.")
    if thinking_on and body.get("temperature") not in (None, 1, 1.0):
        return VendorError("`temperature` may only be set to 1 when thinking is enabled.")
    system_ok = "mid-conversation-" in headers.get("anthropic-beta", "")  # -system-2026-04-07, -tool-changes-
    pending: list[str] = []  # tool_use ids of the previous assistant message
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant") and not (role == "system" and system_ok):
            return VendorError(f"messages.{n}.role: Input should be 'user' or 'assistant'")
        blocks = _blocks(message.get("content"))
        if not blocks and n != len(messages) - 1:
            return VendorError(f"messages.{n}: all messages must have non-empty content")
        results: list[str] = []
        for m, block in enumerate(blocks):
            kind = block.get("type")
            where = f"messages.{n}.content.{m}"
            if kind not in ANTHROPIC_BLOCKS:
                return VendorError(f"{where}.type: Input tag '{kind}' found using 'type' does not match any tag")
            if kind == "text" and not block.get("text"):
                return VendorError(f"{where}: text content blocks must be non-empty")
            signed = seal.open(block.get("signature")) if kind == "thinking" else None
            if kind == "thinking" and (signed is None or signed.get("thinking") != block.get("thinking")):
                return VendorError(f"{where}: Invalid `signature` in `thinking` block")
            if kind == "redacted_thinking" and seal.open(block.get("data")) is None:
                return VendorError(f"{where}: Invalid `data` in `redacted_thinking` block")
            if kind == "tool_use" and not isinstance(block.get("input"), dict):
                return VendorError(f"{where}.input: Input should be a valid dictionary")
            if kind == "tool_result":
                results.append(str(block.get("tool_use_id")))
        if role == "user" or role == "system":
            stray = [r for r in results if r not in pending]
            if stray:
                return VendorError(
                    f"messages.{n}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: {stray[0]}. "
                    "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
                )
            missing = [p for p in pending if p not in results]
            if missing:
                return VendorError(
                    f"messages.{n - 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{missing[0]}. Each `tool_use` block must have a corresponding `tool_result` block in the "
                    "next message."
                )
            pending = []
        else:
            pending = [str(b.get("id")) for b in blocks if b.get("type") == "tool_use"]
            if thinking_on and pending and n == len(messages) - 2 and messages[-1].get("role") == "user":
                first = blocks[0].get("type")
                if first not in ("thinking", "redacted_thinking"):
                    return VendorError(
                        f"messages.{n}.content.0.type: Expected `thinking` or `redacted_thinking`, but found "
                        f"`{first}`. {THINKING_RULE}"
                    )
    return None


# ---------------------------------------------------------------- OpenAI Chat Completions


def chat_reasoning_on(body: dict[str, Any]) -> bool:
    return body.get("reasoning_effort") not in (None, "none")


def check_chat(body: dict[str, Any]) -> VendorError | None:
    if (extra := _unknown_field(body, CHAT_FIELDS)) is not None:
        return VendorError(f"Unrecognized request argument supplied: {extra}", param=extra)
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return VendorError("Invalid 'messages': empty array.", param="messages", code="empty_array")
    pending: list[str] = []
    for n, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("system", "developer", "user", "assistant", "tool"):
            return VendorError(f"Invalid value: '{role}'.", param=f"messages[{n}].role", code="invalid_value")
        if role == "tool":
            call_id = message.get("tool_call_id")
            if call_id not in pending:
                return VendorError(
                    "Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                    "with 'tool_calls'.",
                    param=f"messages.[{n}].role",
                )
            pending.remove(call_id)
            continue
        if pending:
            return VendorError(
                "An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                f"'tool_call_id'. The following tool_call_ids did not have response messages: {pending[0]}",
                param=f"messages.[{n}].role",
            )
        for m, call in enumerate(message.get("tool_calls") or []) if role == "assistant" else ():
            arguments = (call.get("function") or {}).get("arguments")
            if _bad_json(arguments):
                return VendorError(
                    f"Invalid value for 'messages[{n}].tool_calls[{m}].function.arguments': not valid JSON.",
                    param=f"messages[{n}].tool_calls[{m}].function.arguments",
                    code="invalid_value",
                )
            pending.append(call.get("id"))
    return None


# ---------------------------------------------------------------- OpenAI Responses


def responses_reasoning_on(body: dict[str, Any]) -> bool:
    reasoning = body.get("reasoning")
    return isinstance(reasoning, dict) and reasoning.get("effort") not in (None, "none")


def check_responses(body: dict[str, Any], seal: Seal) -> VendorError | None:
    if (extra := _unknown_field(body, RESPONSES_FIELDS)) is not None:
        return VendorError(f"Unknown parameter: '{extra}'.", param=extra, code="unknown_parameter")
    items = body.get("input")
    if isinstance(items, str):
        return None
    if not isinstance(items, list):
        return VendorError("Invalid type for 'input'.", param="input", code="invalid_type")
    calls: set[str] = set()
    reasoned: set[str] = set()  # call ids named by a reasoning item sent back
    for n, item in enumerate(items):
        kind = item.get("type", "message") if isinstance(item, dict) else None
        if kind not in RESPONSES_ITEMS:
            return VendorError(f"Invalid value: '{kind}'.", param=f"input[{n}].type", code="invalid_value")
        if kind == "message" and item.get("role") not in ("user", "assistant", "system", "developer"):
            return VendorError(f"Invalid value: '{item.get('role')}'.", param=f"input[{n}].role", code="invalid_value")
        if kind == "reasoning":
            sealed = seal.open(item.get("encrypted_content"))
            if sealed is None:
                return VendorError(
                    f"The encrypted content for item {item.get('id')} could not be verified.",
                    param=f"input[{n}].encrypted_content",
                    code="invalid_encrypted_content",
                )
            reasoned.add(str(sealed.get("call_id")))
        if kind == "function_call":
            if _bad_json(item.get("arguments")):
                return VendorError(
                    f"Invalid value for 'input[{n}].arguments': not valid JSON.",
                    param=f"input[{n}].arguments",
                    code="invalid_value",
                )
            call_id = str(item.get("call_id"))
            if call_id.endswith("_r") and call_id not in reasoned:
                return VendorError(
                    f"Item '{item.get('id') or call_id}' of type 'function_call' was provided without its required "
                    f"'reasoning' item: 'rs_{call_id}'.",
                    param="input",
                )
            calls.add(call_id)
        if kind == "function_call_output" and not body.get("previous_response_id") and item.get("call_id") not in calls:
            return VendorError(
                f"No tool call found for function call output with call_id {item.get('call_id')}.",
                param="input",
            )
    return None
