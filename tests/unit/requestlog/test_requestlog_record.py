"""Log rows are clipped to their columns so one odd value cannot fail a batch."""

from __future__ import annotations

from typing import Any

from modelport.requestlog.record import MAX_ERROR_CHARS, LogRecord


def test_long_strings_and_huge_counts_are_clipped() -> None:
    rec = LogRecord(
        id="req_1",
        team_id="team_1",
        created_at_ms=1,
        status="s" * 40,
        provider="p" * 300,
        model_name="m" * 300,
        endpoint="e" * 50,
        error="x" * 10_000,
        prompt_tokens=2**40,
        completion_tokens=-3,
        session_id="s" * 256,
        svc_user_id="u" * 128,
    )
    row = rec.as_row()
    assert len(row["status"]) == 16 and len(row["provider"]) == 100 and len(row["model_name"]) == 200
    assert len(row["endpoint"]) == 32 and len(row["error"]) == MAX_ERROR_CHARS and len(row["session_id"]) == 128
    assert row["svc_user_id"] == "u" * 128
    assert row["prompt_tokens"] == 2**31 - 1 and row["completion_tokens"] == 0 and row["cached_tokens"] is None
    assert LogRecord.from_row(row).as_row() == row


def test_every_string_column_is_clipped_to_its_width_and_cleared_of_nul() -> None:
    """The widths written out in `as_row` are the table's: each VARCHAR column gets a value one character
    too long (with a NUL in it) and must come back at exactly its width, NUL replaced."""
    from sqlalchemy import String

    from modelport.requestlog.tables import request_logs

    widths = {c.key: c.type.length for c in request_logs.c if isinstance(c.type, String) and c.type.length}
    assert {"id", "team_id", "status", "provider", "model_name", "endpoint", "key_id"} <= set(widths)
    values: dict[str, Any] = {name: "\x00" + "v" * width for name, width in widths.items()}
    row = LogRecord(created_at_ms=1, **values).as_row()
    for name, width in widths.items():
        assert len(row[name]) == width, name
        assert row[name].startswith("\ufffd") and "\x00" not in row[name], name
    kept = LogRecord("r", "t", 1, "success", "p", "m", "e", input="a\x00b", result="c\x00d").as_row()
    assert kept["input"] == "a\ufffdb" and kept["result"] == "c\ufffdd"
