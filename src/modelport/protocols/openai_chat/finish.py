"""Chat ``finish_reason`` ↔ canonical `StopReason`."""

from __future__ import annotations

from modelport.core.response import StopReason

_FROM_WIRE = {
    "stop": StopReason.END_TURN,
    "length": StopReason.MAX_TOKENS,
    "tool_calls": StopReason.TOOL_USE,
    "function_call": StopReason.TOOL_USE,
    "content_filter": StopReason.CONTENT_FILTER,
}

_TO_WIRE = {
    StopReason.END_TURN: "stop",
    StopReason.STOP_SEQUENCE: "stop",
    StopReason.PAUSE_TURN: "stop",
    StopReason.REFUSAL: "stop",  # the refusal text itself travels in `message.refusal`
    StopReason.MAX_TOKENS: "length",
    StopReason.TOOL_USE: "tool_calls",
    StopReason.CONTENT_FILTER: "content_filter",
    StopReason.ERROR: "stop",
}


def stop_reason_from_wire(value: object, *, refused: bool = False) -> StopReason | None:
    """Map a finish_reason; a plain ``stop`` whose message is a refusal becomes REFUSAL."""
    if not isinstance(value, str):
        return None
    reason = _FROM_WIRE.get(value, StopReason.END_TURN)
    if reason is StopReason.END_TURN and refused:
        return StopReason.REFUSAL
    return reason


def finish_reason_to_wire(reason: StopReason | None) -> str:
    return _TO_WIRE.get(reason, "stop") if reason is not None else "stop"
