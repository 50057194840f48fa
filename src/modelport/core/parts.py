"""Content parts: the smallest pieces of a message or a response.

Every part is an immutable, slotted dataclass. `kind` is a class-level tag so code can dispatch on it or
log it without isinstance chains; `match part:` with class patterns works too.

Media is carried either by reference (`url`, an http(s) URL) or inline (`data`, base64 text without the
``data:`` prefix, plus `media_type`). Decoders turn a ``data:<mime>;base64,...`` URL into the inline form
(see `modelport.core.media.parse_data_url`), so encoders only ever see one of the two shapes.

`extras` holds fields of the *source* protocol that have no canonical meaning (e.g. Anthropic
``cache_control``). Only the codec of the protocol named in `CanonicalRequest.source_protocol` may
re-emit them; others must ignore them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


def _no_extras() -> dict[str, Any]:
    return {}


@dataclass(frozen=True, slots=True, kw_only=True)
class TextPart:
    kind: ClassVar[str] = "text"
    text: str
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)
    # Output only: token log probabilities, entries {token, logprob, bytes, top_logprobs} (the same shape in
    # Chat `logprobs.content` and Responses `output_text.logprobs`); None when the upstream sent none.
    logprobs: list[dict[str, Any]] | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ImagePart:
    """An image by URL or inline base64. `detail` is OpenAI's low/high/auto hint when given."""

    kind: ClassVar[str] = "image"
    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    detail: str | None = None
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)

    @property
    def data_url(self) -> str | None:
        """The inline image as a ``data:`` URL, or None when it is a URL reference."""
        if self.data is None:
            return None
        return f"data:{self.media_type or 'application/octet-stream'};base64,{self.data}"


@dataclass(frozen=True, slots=True, kw_only=True)
class FilePart:
    """A document, PDF or video file, by URL or inline base64."""

    kind: ClassVar[str] = "file"
    url: str | None = None
    data: str | None = None
    media_type: str | None = None
    filename: str | None = None
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)

    @property
    def data_url(self) -> str | None:
        if self.data is None:
            return None
        return f"data:{self.media_type or 'application/octet-stream'};base64,{self.data}"

    @property
    def is_video(self) -> bool:
        return (self.media_type or "").startswith("video/")


@dataclass(frozen=True, slots=True, kw_only=True)
class AudioPart:
    """Inline audio input: raw base64 `data` and a short `format` name (``wav``, ``mp3``)."""

    kind: ClassVar[str] = "audio"
    data: str
    format: str
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCallPart:
    """A function call made by the model. `arguments` is the JSON text exactly as produced."""

    kind: ClassVar[str] = "tool_call"
    id: str
    name: str
    arguments: str = "{}"
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResultPart:
    """The result of a tool call, sent back by the client.

    `content` is plain text or a tuple of text/image parts (a tool may return an image).
    `name` is the tool's name when the source protocol carries it (Chat does not always).
    """

    kind: ClassVar[str] = "tool_result"
    tool_call_id: str
    content: str | tuple[TextPart | ImagePart, ...] = ""
    is_error: bool = False
    name: str | None = None
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)

    @property
    def text(self) -> str:
        """The textual content only (images dropped), for protocols that accept text results."""
        if isinstance(self.content, str):
            return self.content
        return "".join(p.text for p in self.content if isinstance(p, TextPart))


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningPart:
    """Model reasoning ("thinking").

    - `text`: readable reasoning or its summary (may be empty).
    - `signature`: Anthropic thinking signature, needed to replay the block.
    - `redacted`: Anthropic ``redacted_thinking`` opaque data (then `text` is empty).
    - `id` / `encrypted_content`: OpenAI Responses reasoning item id and encrypted payload.
    Provider-opaque fields are only meaningful to the provider that produced them.
    """

    kind: ClassVar[str] = "reasoning"
    text: str = ""
    signature: str | None = None
    redacted: str | None = None
    id: str | None = None
    encrypted_content: str | None = None
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class RefusalPart:
    """A model refusal message (OpenAI ``message.refusal`` / ``refusal`` content)."""

    kind: ClassVar[str] = "refusal"
    text: str
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class OpaquePart:
    """A block of one protocol with no canonical meaning, kept verbatim (e.g. Anthropic ``server_tool_use``,
    ``web_search_tool_result``, ``compaction``). Only the codec named by `protocol` re-emits `data`;
    every other encoder skips the part."""

    kind: ClassVar[str] = "opaque"
    protocol: str
    data: dict[str, Any]
    extras: dict[str, Any] = field(default_factory=_no_extras, compare=False)


# Parts a client may send in a message.
InputPart = (
    TextPart
    | ImagePart
    | FilePart
    | AudioPart
    | ToolCallPart
    | ToolResultPart
    | ReasoningPart
    | RefusalPart
    | OpaquePart
)
# Parts a model produces in a response.
OutputPart = TextPart | RefusalPart | ReasoningPart | ToolCallPart | OpaquePart
Part = InputPart
