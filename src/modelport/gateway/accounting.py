"""The money-and-limits side of a text request, as the pipeline sees it.

`admit` runs before the upstream call (rate limits, concurrency, balance hold) and may refuse with 429 or
402; `finish` runs exactly once when the request has ended, whatever the way (success, error, client gone),
and must not block: settlement and logging happen off the hot path.
"""

from __future__ import annotations

from typing import Any, Protocol

from modelport.accounts.auth import AuthContext
from modelport.errors import ServiceError
from modelport.gateway.context import Outcome, RequestContext


class Accounting(Protocol):
    async def admit(self, ctx: RequestContext) -> None: ...

    def finish(self, ctx: RequestContext, outcome: Outcome) -> None: ...

    def refuse(
        self,
        request_id: str,
        auth: AuthContext,
        endpoint: str,
        body: dict[str, Any] | None,
        started_ms: int,
        error: ServiceError,
    ) -> None:
        """A request refused before it had a context (invalid body or headers, unknown model)."""
        ...


class NoAccounting:
    """No limits, no billing: for tests of the protocol layer alone."""

    async def admit(self, ctx: RequestContext) -> None:
        return None

    def finish(self, ctx: RequestContext, outcome: Outcome) -> None:
        return None

    def refuse(
        self,
        request_id: str,
        auth: AuthContext,
        endpoint: str,
        body: dict[str, Any] | None,
        started_ms: int,
        error: ServiceError,
    ) -> None:
        return None
