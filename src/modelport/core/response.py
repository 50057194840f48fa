"""The canonical (non-streamed) response of a text model."""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from modelport.core.parts import OutputPart, ReasoningPart, RefusalPart, TextPart, ToolCallPart
from modelport.core.usage import Usage


class StopReason(StrEnum):
    """Why generation stopped. Mapping per protocol:

    | canonical     | Chat `finish_reason` | Responses                         | Messages `stop_reason` |
    |---------------|----------------------|-----------------------------------|------------------------|
    | end_turn      | stop                 | completed                         | end_turn               |
    | max_tokens    | length               | incomplete: max_output_tokens     | max_tokens             |
    | tool_use      | tool_calls           | completed (function_call items)   | tool_use               |
    | stop_sequence | stop                 | completed                         | stop_sequence          |
    | refusal       | stop (+ refusal)     | completed (refusal content)       | refusal                |
    | content_filter| content_filter       | incomplete: content_filter        | refusal                |
    | pause_turn    | stop                 | incomplete                        | pause_turn             |
    | error         | (stream error)       | failed                            | (error event)          |
    """

    END_TURN = "end_turn"
    MAX_TOKENS = "max_tokens"
    TOOL_USE = "tool_use"
    STOP_SEQUENCE = "stop_sequence"
    REFUSAL = "refusal"
    CONTENT_FILTER = "content_filter"
    PAUSE_TURN = "pause_turn"
    ERROR = "error"


@dataclass(slots=True, kw_only=True)
class CanonicalResponse:
    """One model answer (the first choice when a protocol returned several).

    `created` is UNIX seconds. `extras` keeps fields of the source protocol without a canonical slot
    (e.g. Chat ``system_fingerprint``, ``service_tier``); only that protocol's encoder re-emits them.
    """

    id: str
    model: str
    created: int
    content: list[OutputPart] = field(default_factory=list)
    stop_reason: StopReason | None = None
    stop_sequence: str | None = None
    usage: Usage | None = None
    source_protocol: str | None = None
    extras: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return "".join(p.text for p in self.content if isinstance(p, TextPart))

    @property
    def refusal(self) -> str | None:
        parts = [p.text for p in self.content if isinstance(p, RefusalPart)]
        return "".join(parts) if parts else None

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.content if isinstance(p, ToolCallPart)]

    @property
    def reasoning(self) -> list[ReasoningPart]:
        return [p for p in self.content if isinstance(p, ReasoningPart)]

    def extras_for(self, protocol: str) -> dict[str, Any]:
        return self.extras if self.source_protocol == protocol else {}
