"""The money-and-limits side of a text request, as the pipeline sees it.

`admit` runs before the upstream call (rate limits, concurrency, balance hold) and may refuse with 429 or
402; `finish` runs exactly once when the request has ended, whatever the way (success, error, client gone),
and must not block: settlement and logging happen off the hot path. `refuse` logs a request refused
before it had a context.
"""

from __future__ import annotations

from typing import Protocol

from modelport.gateway.context import Outcome, Refusal, RequestContext


class Accounting(Protocol):
    async def admit(self, ctx: RequestContext) -> None: ...

    def finish(self, ctx: RequestContext, outcome: Outcome) -> None: ...

    def refuse(self, refusal: Refusal) -> None: ...
