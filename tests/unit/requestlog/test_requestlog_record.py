"""Log rows are clipped to their columns so one odd value cannot fail a batch."""

from __future__ import annotations

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
