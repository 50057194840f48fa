"""What both OpenAI protocols share when they encode a request: the reasoning effort for a thinking budget."""

from __future__ import annotations


def effort_from_budget(budget: int | None) -> str | None:
    """Anthropic-style thinking budget → the closest OpenAI effort."""
    if budget is None:
        return None
    if budget <= 2048:
        return "low"
    if budget <= 16384:
        return "medium"
    return "high"
