"""The cache key of a text request: who may share the answer, and a hash of everything that can change it.

The key is the team (the row or Redis key it is stored under), and in `key` mode the API key, the client
protocol, the model id and a canonical hash of the canonical request (`core/messages.CanonicalRequest`):
messages, system prompt, tools, tool choice, response format, sampling and output settings and the
protocol's own fields (`extras`). Because it is hashed from the decoded request, key order and
whitespace of the client's JSON do not matter; one changed character does. Inline images, files and
audio count by the SHA-256 of their bytes. Left out: whether the request streams, and what cannot change
the answer (the end-user tag, metadata, the protocol's neutral fields: `ProtocolCodec.cache_neutral`).
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import hashlib
from typing import Any

import orjson

from modelport.core.messages import HOW_DELIVERED, CanonicalRequest

# Canonical request fields that do not change the answer (or are keyed apart: model, protocol).
_LEFT_OUT = frozenset(
    {"model", "user", "metadata", "source_protocol", "extras"}
    | {f.name for f in dataclasses.fields(CanonicalRequest) if f.metadata.get(HOW_DELIVERED)}
)
# Extras the gateway itself adds after decoding (stored Responses), echoed but never sent upstream.
_GATEWAY_EXTRAS = frozenset({"_stored", "_previous_response_id"})
# Inline media fields, hashed by their bytes.
_INLINE = frozenset({"data"})


def request_digest(
    request: CanonicalRequest, protocol: str, *, key_id: str | None = None, neutral: frozenset[str] = frozenset()
) -> str:
    """The hex SHA-256 naming `request`'s answer for one team (`key_id` given: for one key of it)."""
    extras = {k: v for k, v in request.extras.items() if k not in neutral and k not in _GATEWAY_EXTRAS}
    fields = {f.name: _plain(getattr(request, f.name)) for f in dataclasses.fields(request) if f.name not in _LEFT_OUT}
    material = {"k": key_id, "p": protocol, "m": request.model, "r": fields, "x": _plain(extras)}
    return hashlib.sha256(orjson.dumps(material, option=orjson.OPT_SORT_KEYS)).hexdigest()


def _plain(value: Any) -> Any:
    """`value` as JSON-able data with a tag per dataclass (an image and a file never look alike) and
    inline media as the hash of its bytes."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out: dict[str, Any] = {"_t": type(value).__name__}
        for f in dataclasses.fields(value):
            item = getattr(value, f.name)
            out[f.name] = _media_hash(item) if f.name in _INLINE and isinstance(item, str) else _plain(item)
        return out
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value.is_integer():
        return int(value)  # 1 and 1.0 ask for the same temperature
    return value


def _media_hash(data: str) -> str:
    try:
        raw = base64.b64decode(data, validate=False)
    except (binascii.Error, ValueError):
        raw = data.encode("utf-8", "surrogatepass")
    return "sha256:" + hashlib.sha256(raw).hexdigest()
