"""Request fields Chat Completions and Responses share, carried across when one speaks to the other.

Both OpenAI protocols take ``prompt_cache_key``, ``prompt_cache_retention``, ``store``, ``service_tier`` and
``safety_identifier`` under the same names and meanings, so a request translated between them keeps them
(docs/api/translation.md). Log probabilities are spelled differently: Chat ``logprobs: true`` (+
``top_logprobs``) is Responses ``include: ["message.output_text.logprobs"]`` (+ ``top_logprobs``).
"""

from __future__ import annotations

from typing import Any

from modelport.core.codec import ListedModel
from modelport.core.messages import CanonicalRequest

SHARED_FIELDS = ("prompt_cache_key", "prompt_cache_retention", "store", "service_tier", "safety_identifier")
LOGPROBS_INCLUDE = "message.output_text.logprobs"
_OPENAI = ("openai_chat", "openai_responses")


def _other_openai(req: CanonicalRequest, target: str) -> dict[str, Any]:
    """The client's top-level fields when it spoke the other OpenAI protocol, else nothing."""
    if req.source_protocol not in _OPENAI or req.source_protocol == target:
        return {}
    return req.extras


def carry_to_chat(req: CanonicalRequest, body: dict[str, Any]) -> None:
    extras = _other_openai(req, "openai_chat")
    body.update({k: extras[k] for k in SHARED_FIELDS if extras.get(k) is not None})
    include = extras.get("include")
    if isinstance(include, list) and LOGPROBS_INCLUDE in include:
        body["logprobs"] = True
        if isinstance(extras.get("top_logprobs"), int):
            body["top_logprobs"] = extras["top_logprobs"]


def carry_to_responses(req: CanonicalRequest, body: dict[str, Any]) -> None:
    extras = _other_openai(req, "openai_responses")
    body.update({k: extras[k] for k in SHARED_FIELDS if extras.get(k) is not None})
    if extras.get("logprobs") is True:
        include = body.setdefault("include", [])
        if LOGPROBS_INCLUDE not in include:
            include.append(LOGPROBS_INCLUDE)
        if isinstance(extras.get("top_logprobs"), int):
            body["top_logprobs"] = extras["top_logprobs"]


def logprob_entries(value: Any) -> list[dict[str, Any]] | None:
    """Token log probability entries from the wire (Chat ``logprobs.content`` or Responses
    ``output_text.logprobs``, the same shape): the dict entries of a non-empty list, else None."""
    if not isinstance(value, list):
        return None
    entries = [e for e in value if isinstance(e, dict)]
    return entries or None


def chat_logprobs(entries: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """A Chat choice's ``logprobs`` object for `entries` (None when there are none)."""
    return {"content": entries, "refusal": None} if entries else None


def openai_error_body(
    message: str, type: str, *, code: str | None = None, param: str | None = None, status: int | None = None
) -> dict[str, Any]:
    """OpenAI's error shape (Chat Completions, Responses and the text host's other routes): ``param`` and
    ``code`` always present, null when unknown, as the real API sends them. The one renderer of it."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}


def model_fields(model: ListedModel) -> dict[str, Any]:
    """An entry of OpenAI's Models API (``object: model``), with the context limits clients size with."""
    return {
        "id": model.id,
        "object": "model",
        "created": model.created_at,
        "owned_by": model.provider,
        "context_window": model.context_window,
        "max_output_tokens": model.max_output_tokens,
    }


def model_list_fields(data: list[dict[str, Any]]) -> dict[str, Any]:
    return {"object": "list", "data": data}
