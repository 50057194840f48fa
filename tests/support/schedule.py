"""Which tests must not share the machine: read by tests/conftest.py, which marks them at collection.

`scripts/test.sh` runs the suite on three xdist workers, with the `serial` tests beside them, one at a time.
A test is here for a measured reason, said beside it; an entry is a node-id prefix (a file, or a file and the
start of a test name).

- SERIAL: timing-sensitive. Each asserts a bound on wall time or on a deadline the server keeps (a 408
  after a timeout, a cut after a grace period, a cancel within seconds) that another CPU-bound process
  beside it could push past. They run one at a time, at normal CPU priority, beside the parallel stage, whose
  processes run at nice 19 (scripts/test.sh): the kernel gives them the CPU whenever they want it.
- LONG: groups whose few tests take minutes. pytest-xdist hands the groups out in the order of the
  collection (scripts/test.sh turns its own ordering, by number of tests, off): the heavy group first, then
  these, longest first, then the other groups by their number of tests, the single unit tests last. Ordered
  by count, a file of two 100-second tests went out among the last, and the run waited on its worker while
  the other two were idle (CI 2026-12-06: the parallel stage was 1.33x its workers' mean busy time).
- HEAVY: CPU-bound for most of their run (a real browser, real coding-agent CLIs, video and speech renders,
  the embedded llama.cpp model, schema-driven fuzzing). They share one xdist group, so they run one after
  another on one worker while the other workers run the light tests beside them.
"""

from __future__ import annotations

SERIAL: dict[str, str] = {
    "tests/integration/test_server_limits.py": "header, keep-alive and body timeouts checked to within seconds",
    "tests/integration/tasks/test_task_controls_serve.py": "a cancel stops a render within 3 s and its CPU use",
    "tests/integration/test_request_logs_writer.py": "rows land within 2 s; writer deadlines of 5-10 s",
    "tests/integration/gateway/test_stored_responses.py::test_a_conversation_lives_from_its_last_use": (
        "a 2 s lifetime: a use and a read 0.7 s inside it"
    ),
    "tests/integration/gateway/test_stored_responses.py::test_a_stored_response_expires": (
        "a stored response read within its 2 s lifetime"
    ),
    "tests/integration/assets/test_vendora_adapter.py::test_breaker_opens_after_repeated_failures_and_half_opens": (
        "the breaker checked open within its 0.3 s window"
    ),
    "tests/integration/foundation/test_credit.py::test_a_dead_process_reservation_comes_back_after_its_lease": (
        "a dead reservation back within lease + sweep + 1 s"
    ),
    "tests/integration/foundation/test_key_budget_credit.py::test_a_dead_process_key_reservation": (
        "a key's reservation swept back within 5 s"
    ),
    "tests/integration/tasks/test_task_events_serve.py::test_stream_of_a_task_run_by_another_process": (
        "the last event within 1.5 s of the render's end (one hit the 300 s timeout at nice 19, 2026-12-02)"
    ),
    "tests/integration/test_media_files_http.py::test_real_expiry_and_quota": (
        "1 s file retention: the quota refusal must come before it"
    ),
    "tests/integration/console/test_console_sessions.py::test_sessions_expire_and_sign_in_is_rate_limited": (
        "a 2 s session used before it ends"
    ),
    "tests/integration/accounts/test_session_cookie_serve.py": "no 8 s gap between requests over 16 s",
    "tests/integration/tasks/test_task_streams_serve.py::test_a_stream_ends_when_its_key_expires": (
        "a key that expires in 3 s opens a stream first"
    ),
    "tests/integration/tasks/test_task_idempotency_serve.py::test_task_replay_conflict_per_team_and_expiry": (
        "an 8 s idempotency key outlives a render wait and three conflicting POSTs"
    ),
    "tests/integration/failover/test_deployment_timeouts.py": "1 s connect and idle timeouts, checked to within 12 s",
    "tests/integration/scim/test_scim_serve.py::test_deactivation_and_delete_end_a_live_session": (
        "10 requests within 6 s of a deactivation"
    ),
    "tests/integration/gateway/test_background_responses.py::test_cancel_queued_and_running": (
        "a cancel inside an 8 s run on a 2 s lease; 1.5 s without a change counts as settled"
    ),
    "tests/integration/gateway/test_shutdown_cut.py": "streams cut at the grace period (0.9-8 s)",
    "tests/unit/upstreams/test_local_model.py": (
        "the embedded model idle within 1 s of a cancel, event-loop gaps under 0.1 s (a cancel took over 1 s beside"
        " a parallel worker)"
    ),
    "tests/unit/support/test_bench_fake_upstream.py": "192 requests answered in parallel within 8 s",
    "tests/integration/tasks/test_tasks_restart.py": "a SIGKILLed server's tasks finish after a restart (CI stall)",
    "tests/integration/conformance_gateway/test_local_model_e2e.py": (
        "llama.cpp's two threads wait on each other at every token: beside a parallel worker a test took 35-50 s"
    ),
    "tests/integration/money/test_credit_processes.py": "a killed worker's holds come back within lease + sweep + 5 s",
    "tests/integration/ops/test_health_serve.py::test_readyz_answers_draining": "5 requests within the 8 s drain",
    "tests/integration/response_cache/test_cache_rules.py::test_an_entry_expires_after_its_ttl_in_seconds": (
        "a 2 s TTL: the hit must be read within 2 s of the store, the miss after it"
    ),
    "tests/integration/accounts/test_accounts_limits_serve.py": (
        "setup and invitation links that expire after 2 s; a removal refused on both processes within 1 s"
    ),
    "tests/integration/failover/test_shared_cooldowns.py": "a cooldown heard by another process within 1 s",
    "tests/integration/tasks/test_render_pool_serve.py": (
        "both hosts answer within 2 s while a video renders (a probe took 16 s at nice 19 in CI, 2026-12-03)"
    ),
    "tests/integration/test_ratelimit_redis_crossprocess.py": (
        "two processes must start within 2 s of each other and overlap (failed beside a parallel worker)"
    ),
}

HEAVY: dict[str, str] = {
    "tests/integration/agents_cli/": "Claude Code and Codex CLI (node) against a real serve",
    "tests/integration/console/test_console_browser.py": "Chromium",
    "tests/integration/accounts/test_accounts_browser.py": "Chromium",
    "tests/integration/console/test_operator_browser.py": "Chromium",
    "tests/integration/console/test_fuzz_console_forms.py": "schemathesis",
    "tests/integration/gateway/test_fuzz_openapi.py": "schemathesis",
    "tests/integration/gateway/test_fuzz_query_params.py": "schemathesis",
    "tests/integration/gateway/test_fuzz_protocol_bodies.py": "hypothesis against a real serve",
    "tests/integration/tasks/test_style_video_serve.py": "video renders",
    "tests/integration/tasks/test_slideshow_serve.py": "video renders",
    "tests/integration/tasks/test_speech_serve.py": "speech synthesis",
    "tests/integration/tasks/test_style_transfer_serve.py": "ONNX style transfer",
    "tests/integration/tasks/test_render_process_serve.py": "video renders in a process pool",
    "tests/integration/ops/test_replicas.py": "three serve processes on PostgreSQL, 150 concurrent requests",
}


# Seconds: the group's test time in a loaded full run (CI 2026-12-06, load average 8-10); a quiet run takes
# about half. Listed longest first.
LONG: dict[str, str] = {
    "tests/integration/retention/test_upgrade_with_data.py": "279 s in 2 tests (every migration with data)",
    "tests/integration/gateway/test_postgres_door.py": "272 s in 3 tests (schema fuzzing on PostgreSQL)",
    "tests/integration/failover/test_chaos_failover.py": "200 s in 77 tests",
    "tests/integration/keys/test_key_limits_serve.py": "198 s in 20 tests",
    "tests/integration/console/test_console_session_revocation.py": "170 s in 10 tests",
    "tests/integration/response_cache/test_cache_rules.py": "128 s in 24 tests",
    "tests/integration/foundation/test_serve.py": "118 s in 16 tests",
    "tests/integration/accounts/test_accounts_serve.py": "106 s in 22 tests",
    "tests/integration/operator/test_operator_serve.py": "104 s in 4 tests",
    "tests/integration/retention/test_backup_restore.py": "103 s in 3 tests",
    "tests/integration/accounts/test_first_operator_serve.py": "95 s in 1 test (now 2)",
    "tests/integration/retention/test_retention_serve.py": "89 s in 2 tests",
    "tests/integration/alerts/test_operator_alerts_serve.py": "88 s in 4 tests",
    "tests/integration/reference/test_reference_hardening.py": "81 s in 4 tests",
}
HEAVY_GROUP = "heavy"


def group_order(groups: list[str | None]) -> list[tuple[int, int]]:
    """The sort key of each item's xdist group (None: a test of its own) in the order the groups go out:
    the heavy group, the LONG ones as listed, the others by their number of tests, single tests last."""
    counts: dict[str | None, int] = {}
    for group in groups:
        counts[group] = counts.get(group, 0) + 1
    long_rank = {path: rank for rank, path in enumerate(LONG)}

    def key(group: str | None) -> tuple[int, int]:
        if group == HEAVY_GROUP:
            return (0, 0)
        if group in long_rank:
            return (1, long_rank[group])
        if group is None:
            return (3, 0)
        return (2, -counts[group])

    return [key(group) for group in groups]


def _find(table: dict[str, str], nodeid: str) -> str | None:
    return next((reason for prefix, reason in table.items() if nodeid.startswith(prefix)), None)


def serial_files() -> list[str]:
    """The test files that hold serial tests: what the serial stage of scripts/test.sh collects."""
    return sorted({prefix.split("::", 1)[0] for prefix in SERIAL})


def is_serial(nodeid: str) -> bool:
    return _find(SERIAL, nodeid) is not None


def is_heavy(nodeid: str) -> bool:
    return _find(HEAVY, nodeid) is not None
