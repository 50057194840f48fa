"""Schema-driven fuzzing of both hosts' OpenAPI documents (the admin API included) with schemathesis.

Every generated request must get a response that is neither a 5xx nor a status its operation does not
document, in the shape the document gives. The example count is bounded so CI stays short; raise it with
MODELPORT_FUZZ_EXAMPLES for a longer local run.
"""

from __future__ import annotations

import os
from collections import defaultdict
from typing import Any

import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import (
    content_type_conformance,
    response_schema_conformance,
    status_code_conformance,
)

from tests.integration.gateway.conftest import ADMIN_TOKEN, Gateway

EXAMPLES = int(os.environ.get("MODELPORT_FUZZ_EXAMPLES", "15"))
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance, response_schema_conformance]
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
    database=None,
)


def fuzz(url: str, token_for: Any) -> list[str]:
    """Fuzz every operation of the document at `url`; return one line per failing operation."""
    schema = schemathesis.openapi.from_url(url + "/openapi.json")
    failures: list[str] = []
    seen: defaultdict[str, set[int]] = defaultdict(set)
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()  # type: ignore[union-attr]  # an unreadable operation fails the test here
        operations += 1

        # Valid inputs and inputs that break the document (negative mode) alike.
        @given(
            case=st.one_of(
                operation.as_strategy(GenerationMode.POSITIVE), operation.as_strategy(GenerationMode.NEGATIVE)
            )
        )
        @FUZZ_SETTINGS
        def run(case: Any) -> None:
            response = case.call_and_validate(
                base_url=url, headers={"Authorization": f"Bearer {token_for(case.path)}"}, checks=CHECKS, timeout=30
            )
            seen[f"{case.method.upper()} {case.path}"].add(response.status_code)

        try:
            run()
        except BaseException as exc:  # every operation is fuzzed; all failures are reported together
            if isinstance(exc, KeyboardInterrupt):
                raise
            failures.append(f"{operation.method.upper()} {operation.path}: {str(exc)[:1500]}")
    print({op: sorted(statuses) for op, statuses in seen.items()})
    # The run reached every operation (a fuzzer that sends nothing finds nothing).
    assert len(seen) >= operations > 0, (sorted(seen), operations)
    return failures


def test_media_host_and_admin_api_fuzz(gateway: Gateway) -> None:
    failures = fuzz(gateway.server.media_url, lambda path: ADMIN_TOKEN if path.startswith("/admin/") else gateway.key)
    assert not failures, "\n\n".join(failures)


def test_text_host_fuzz(gateway: Gateway) -> None:
    failures = fuzz(gateway.server.text_url, lambda _path: gateway.key)
    assert not failures, "\n\n".join(failures)
