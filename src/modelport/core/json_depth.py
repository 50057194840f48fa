"""How deeply a request body's JSON may nest.

orjson parses 1,024 levels but encodes only 255, and the pipeline wraps a client's values in a few levels
of its own (translated requests, echoed tools in a Responses answer, the log row). A body nested deeper
than MAX_JSON_DEPTH is refused at the door rather than failing half-way, after the upstream was paid.
"""

from __future__ import annotations

from typing import Any

MAX_JSON_DEPTH = 128


def nests_deeper_than(raw: bytes, value: Any, limit: int = MAX_JSON_DEPTH) -> bool:
    """Whether `value` (parsed from `raw`) has containers more than `limit` levels deep."""
    # Fast path for nearly every request: fewer brackets than the limit cannot nest past it.
    if raw.count(b"[") + raw.count(b"{") <= limit:
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            return True
        for child in node.values() if isinstance(node, dict) else node:
            if isinstance(child, (dict, list)):
                stack.append((child, depth + 1))
    return False
