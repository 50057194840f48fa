"""Messages ``stop_reason`` ↔ canonical `StopReason`."""

from __future__ import annotations

from typing import Any

from modelport.core.response import StopReason

_FROM_WIRE = {
    "end_turn": StopReason.END_TURN,
    "max_tokens": StopReason.MAX_TOKENS,
    "stop_sequence": StopReason.STOP_SEQUENCE,
    "tool_use": StopReason.TOOL_USE,
    "pause_turn": StopReason.PAUSE_TURN,
    "refusal": StopReason.REFUSAL,
    # The context window filled up: for the client it is a length cut like max_tokens.
    "model_context_window_exceeded": StopReason.MAX_TOKENS,
}

_TO_WIRE = {
    StopReason.END_TURN: "end_turn",
    StopReason.MAX_TOKENS: "max_tokens",
    StopReason.STOP_SEQUENCE: "stop_sequence",
    StopReason.TOOL_USE: "tool_use",
    StopReason.PAUSE_TURN: "pause_turn",
    StopReason.REFUSAL: "refusal",
    StopReason.CONTENT_FILTER: "refusal",
    # Messages has no stop reason for a failure; a failed stream ends with an ``error`` event instead.
    StopReason.ERROR: "end_turn",
}


def stop_reason_from_wire(value: Any) -> StopReason | None:
    if not isinstance(value, str):
        return None
    return _FROM_WIRE.get(value, StopReason.END_TURN)


def stop_reason_to_wire(reason: StopReason | None, original: Any = None) -> str:
    """The wire value; `original` (the upstream's own value, same protocol) wins when it maps to `reason`,
    so ``model_context_window_exceeded`` survives a Messages → Messages round trip."""
    if isinstance(original, str) and _FROM_WIRE.get(original) == reason:
        return original
    return _TO_WIRE.get(reason or StopReason.END_TURN, "end_turn")
