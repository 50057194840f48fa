"""Put the client's model id into a relayed same-protocol answer, changing nothing else.

Clients expect the `model` they asked for back (Claude Code drops its thinking blocks when the answer names
another model), but an upstream answers with its own name. On the fast path the upstream's bytes are
relayed as they are, so the one `model` value is spliced in place instead of re-serialising the JSON:
whitespace, key order and number spellings stay the upstream's, and an event that names no model costs one
substring test.

Which `"model"` is the answer's: the first one at nesting depth 1 (a body, a Chat chunk) or 2 (inside
Responses' `response` and Messages' `message` objects). A key inside a string is escaped (`\\"model\\"`)
and never matches; tool inputs and schemas sit deeper (and come after the model in every vendor's
answers), so they are never touched.
"""

from __future__ import annotations

import re
from typing import Any

import orjson

# A JSON string, written as the "unrolled loop" (one character class per run): several times faster in `re`.
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"'
_MODEL = re.compile(r'"model"\s*:\s*' + _STRING)
_MODEL_VALUE_BYTES = re.compile(rb'("model"\s*:\s*)' + _STRING.encode())
_STRINGS = re.compile(_STRING)


def _depth(text: str, end: int) -> int:
    """Nesting depth of `text` at `end` (outside any string): brackets counted once strings are cut out,
    all in C (a Python loop over the tokens cost ~10 µs per Chat chunk)."""
    bare = _STRINGS.sub("", text[:end])
    return bare.count("{") + bare.count("[") - bare.count("}") - bare.count("]")


class ModelNamer:
    """Rewrites `model` to one client-facing id; one per request."""

    __slots__ = ("_prefix", "_token", "model")

    def __init__(self, model: str) -> None:
        self.model = model
        self._token = '"model":' + orjson.dumps(model).decode()
        # The text before the last rewritten `model`: a stream's chunks usually share it (a Chat chunk's
        # `{"id":…,"object":…,"created":…,`), and an event starting with it needs no depth count.
        self._prefix = ""

    def event(self, data: str, max_depth: int = 2) -> str:
        """An SSE event's JSON data with its answer-level `model` replaced (unchanged if it has none)."""
        if '"model"' not in data:
            return data
        for match in _MODEL.finditer(data):
            start = match.start()
            prefix = self._prefix
            if not (start == len(prefix) and data.startswith(prefix)):
                if not 1 <= _depth(data, start) <= max_depth:
                    continue
                self._prefix = data[:start]
            return data[:start] + self._token + data[match.end() :]
        return data

    def body(self, payload: bytes, parsed: Any) -> bytes:
        """A whole JSON answer with its top-level `model` replaced; `parsed` is the same answer, decoded."""
        if not isinstance(parsed, dict) or "model" not in parsed:
            return payload
        parsed["model"] = self.model
        text = payload.decode()
        rewritten = self.event(text, max_depth=1)
        if rewritten is text:
            return orjson.dumps(parsed)  # an unusual spelling of the key: re-serialise rather than miss it
        return rewritten.encode()


def splice_request_model(raw: bytes, body: dict[str, Any]) -> bytes | None:
    """A client's request bytes with only the `model` value replaced by ``body["model"]``, every other byte
    kept (spacing included), when that gives exactly `body` (the parsed request with the upstream's model);
    None otherwise (e.g. `"model"` written more than once, or spelled with escapes): then the caller
    serialises `body` instead. A body with escapes is checked by parsing the result (much cheaper than
    counting the nesting depth over a large body's text)."""
    at = raw.find(b'"model"')
    if at < 0 or raw.find(b'"model"', at + 7) >= 0:
        return None
    match = _MODEL_VALUE_BYTES.match(raw, at)
    if match is None:
        return None
    spliced = raw[: match.end(1)] + orjson.dumps(body["model"]) + raw[match.end() :]
    if b"\\" not in raw:
        # No escapes anywhere: the top-level key is spelled `"model"`, so the one occurrence is it.
        return spliced
    try:
        same = orjson.loads(spliced) == body
    except orjson.JSONDecodeError:
        return None
    return spliced if same else None
