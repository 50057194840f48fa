"""The canonical stream: what every stream decoder produces and every stream encoder consumes.

Rules of the stream:
- `ResponseStart` comes first (once).
- `index` is the position of the part in the final `CanonicalResponse.content`. Parts are opened
  implicitly by their first event (`TextDelta`, `ReasoningDelta`, `RefusalDelta` or `ToolCallStart`) and
  indexes are assigned in increasing order of first appearance. Deltas of different parts may interleave
  (parallel tool calls). `PartEnd` closes a part; a decoder may omit it (the stream end closes all).
- `Finish` and `UsageUpdate` may come in either order near the end; `UsageUpdate.usage` is cumulative
  (the latest one wins), and may also appear earlier (e.g. input tokens in Anthropic ``message_start``).
- `StreamError` reports an in-stream failure; nothing useful follows it.
Encoders write final frames (``[DONE]``, ``message_stop``, ``response.completed``) in `close()`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from modelport.core.response import StopReason
from modelport.core.usage import Usage


@dataclass(frozen=True, slots=True)
class ResponseStart:
    id: str
    model: str
    created: int | None = None


@dataclass(frozen=True, slots=True)
class TextDelta:
    index: int
    text: str
    # Token log probabilities of this delta when the upstream sent them: Chat `logprobs.content` entries,
    # which are also Responses `output_text` logprobs entries ({token, logprob, bytes, top_logprobs}).
    logprobs: list[dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class RefusalDelta:
    index: int
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningDelta:
    """A piece of reasoning. Only the fields set are news: `text` appends; the others replace."""

    index: int
    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    id: str | None = None
    encrypted_content: str | None = None


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallDelta:
    index: int
    arguments: str


@dataclass(frozen=True, slots=True)
class PartEnd:
    index: int


@dataclass(frozen=True, slots=True)
class Finish:
    stop_reason: StopReason
    stop_sequence: str | None = None


@dataclass(frozen=True, slots=True)
class UsageUpdate:
    usage: Usage


@dataclass(frozen=True, slots=True)
class StreamError:
    message: str
    type: str = "api_error"


StreamEvent = (
    ResponseStart
    | TextDelta
    | RefusalDelta
    | ReasoningDelta
    | ToolCallStart
    | ToolCallDelta
    | PartEnd
    | Finish
    | UsageUpdate
    | StreamError
)
