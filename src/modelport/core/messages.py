"""The canonical request: messages, tools and generation settings, independent of any wire protocol."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from modelport.core.parts import InputPart, TextPart

Role = Literal["user", "assistant", "tool", "system"]
# The metadata flag of `CanonicalRequest` fields that say how the answer is delivered, not what it is.
HOW_DELIVERED = "how_delivered"


@dataclass(slots=True, kw_only=True)
class Message:
    """One conversation turn.

    System/developer instructions are not messages: they live in `CanonicalRequest.system`. The exception is
    a `system` turn given in the middle of the conversation (Anthropic's mid-conversation system messages):
    it keeps its place, and encoders send it as their protocol's equivalent (a Chat `system` message, a
    Responses `developer` item, Messages' own `system` turn or, failing that, the top-level system prompt).
    Tool results (`ToolResultPart`) appear in `tool` messages (Chat, Responses) or in `user` messages
    (Anthropic puts them there); decoders may emit either and encoders must accept both.
    """

    role: Role
    parts: list[InputPart]
    name: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A function the model may call. `parameters` is a JSON Schema object (None = no parameters)."""

    name: str
    description: str | None = None
    parameters: dict[str, Any] | None = None
    strict: bool | None = None
    extras: dict[str, Any] = field(default_factory=dict, compare=False)


ToolChoiceMode = Literal["auto", "none", "required", "named"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolChoice:
    """`mode` ``named`` forces the tool `name`; ``required`` forces some tool (Anthropic ``any``)."""

    mode: ToolChoiceMode
    name: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReasoningConfig:
    """Reasoning controls: OpenAI-style `effort` (minimal/low/medium/high/...) and/or Anthropic-style
    `budget_tokens`; `summary` is the Responses summary mode. `enabled` False means thinking off."""

    effort: str | None = None
    budget_tokens: int | None = None
    summary: str | None = None
    enabled: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ResponseFormat:
    """Structured output. `type` is ``text``, ``json_object`` or ``json_schema`` (then `schema` is set)."""

    type: Literal["text", "json_object", "json_schema"]
    name: str | None = None
    schema: dict[str, Any] | None = None
    strict: bool | None = None
    description: str | None = None


@dataclass(slots=True, kw_only=True)
class CanonicalRequest:
    """A text-generation request.

    `model` is the model id as the client sent it (``<provider>/<name>`` on our gateway).
    `max_output_tokens` covers Chat ``max_tokens``/``max_completion_tokens``, Responses
    ``max_output_tokens`` and Messages ``max_tokens``.
    `extras` keeps top-level fields of the source protocol that have no canonical slot, keyed by their
    wire name; only the codec named by `source_protocol` re-emits them (same-protocol fidelity).
    """

    model: str
    messages: list[Message]
    system: list[TextPart] = field(default_factory=list)
    tools: list[ToolSpec] = field(default_factory=list)
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    max_output_tokens: int | None = None
    temperature: float | None = None
    top_p: float | None = None
    stop: list[str] = field(default_factory=list)
    # How the answer is delivered, not what it is (`HOW_DELIVERED`: the response cache leaves them out of its key).
    stream: bool = field(default=False, metadata={HOW_DELIVERED: True})
    include_usage: bool = field(default=False, metadata={HOW_DELIVERED: True})
    n: int | None = None
    reasoning: ReasoningConfig | None = None
    response_format: ResponseFormat | None = None
    user: str | None = None
    metadata: dict[str, str] | None = None
    source_protocol: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def system_text(self) -> str:
        """All system instructions joined by blank lines, for protocols with a single system string."""
        return "\n\n".join(p.text for p in self.system)

    def extras_for(self, protocol: str) -> dict[str, Any]:
        """`extras` if this request came from `protocol`, else an empty dict."""
        return self.extras if self.source_protocol == protocol else {}
