"""Responses ``status`` / ``incomplete_details`` ↔ canonical `StopReason`.

A completed response stops for a tool call when its output has ``function_call`` items, and is a
refusal when its only content is a refusal; Responses has no stop reason of its own for either.
"""

from __future__ import annotations

from typing import Any

from modelport.core.response import StopReason

_INCOMPLETE_FROM_WIRE = {
    "max_output_tokens": StopReason.MAX_TOKENS,
    "content_filter": StopReason.CONTENT_FILTER,
}


def stop_reason_from_wire(
    status: Any, incomplete_details: Any, *, has_tool_calls: bool, refused: bool
) -> StopReason | None:
    if status in ("queued", "in_progress"):
        return None  # not finished
    if status == "incomplete":
        reason = incomplete_details.get("reason") if isinstance(incomplete_details, dict) else None
        return _INCOMPLETE_FROM_WIRE.get(str(reason), StopReason.PAUSE_TURN)
    if status in ("failed", "cancelled"):
        return StopReason.ERROR
    # "completed", and (leniently) anything unknown from an upstream that did answer.
    if has_tool_calls:
        return StopReason.TOOL_USE
    return StopReason.REFUSAL if refused else StopReason.END_TURN


def status_to_wire(reason: StopReason | None) -> tuple[str, dict[str, Any] | None]:
    """(``status``, ``incomplete_details``) of a finished response."""
    if reason is StopReason.MAX_TOKENS:
        return "incomplete", {"reason": "max_output_tokens"}
    if reason is StopReason.CONTENT_FILTER:
        return "incomplete", {"reason": "content_filter"}
    if reason is StopReason.PAUSE_TURN:
        return "incomplete", None
    if reason is StopReason.ERROR:
        return "failed", None
    return "completed", None
