"""What the pipeline knows about one text request: its context (business facts, fixed once admitted), what
admission decided (`Admission`, returned by metering), its timings (for the latency metrics only), and how
it ended (`Outcome`, built by the pipeline alone from what the upstream caller and the relay return)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from modelport.accounts.auth import AuthContext
from modelport.billing.credit import Allocation
from modelport.catalog_spec import TextModel
from modelport.core.codec import ProtocolCodec
from modelport.core.messages import CanonicalRequest
from modelport.core.usage import Usage
from modelport.errors import ServiceError
from modelport.ratelimit import Lease
from modelport.requestlog.record import RequestStatus
from modelport.response_cache import Plan
from modelport.responses_store.plan import ToKeep

CLIENT_GONE = "client disconnected"


@dataclass(frozen=True, slots=True)
class Admission:
    """What metering's admission decided for a request it let through, and what it holds for it until the
    request is settled (`Metering.admit` returns it; the pipeline keeps it on the context and
    `Metering.settle` gives it back)."""

    # The hold taken from the team's credit reservation, settled when the request ends.
    held_micros: int
    # The output cap the team's credit allows when it cannot cover the model's maximum output; None: no cap
    # is added (the client's own, if any, goes upstream as it sent it).
    output_cap: int | None
    # The team's inference rate limit as `X-RateLimit-*` response headers.
    headers: Mapping[str, str]
    # Tokens counted against token-per-minute limits (estimated input + expected output; 0: no such limit).
    tpm_tokens: int
    # The holding, given back by settlement: the hold's allocation from the reservation, the team's
    # in-flight slot, and each token-per-minute count made (limiter key, limit, tokens counted).
    allocation: Allocation | None = None
    lease: Lease | None = None
    counted: tuple[tuple[str, int, int], ...] = ()


# Before admission (and for a request refused by it): nothing held, no cap.
NOT_ADMITTED = Admission(held_micros=0, output_cap=None, headers={}, tpm_tokens=0)


@dataclass(slots=True)
class BackgroundRun:
    """A background response's attempt going through the pipeline (gateway/background_responses.py, in the
    request's scope state as `background_run`). Its requests per minute were counted when the response was
    created; `unbilled`, set by the runner before the settlement runs, makes the settlement give back what
    admission took and charge and log nothing (an attempt cut by its process's end, or taken over by another
    attempt: the response is charged once, for the attempt that completes)."""

    unbilled: bool = False
    ending: bool = False  # the attempt is writing its end: a shutdown lets it finish rather than cut it

    def settle(self, settle: Callable[[], None], void: Callable[[], None]) -> None:
        """The attempt's settlement, decided when it runs: `void` (unbilled) when the runner said so."""
        if self.unbilled:
            void()
        else:
            settle()


@dataclass(slots=True)
class RequestContext:
    request_id: str
    endpoint: str  # the request log's name of the route (`ClientRoute.endpoint`)
    codec: ProtocolCodec  # the client's wire protocol
    auth: AuthContext
    body: dict[str, Any]
    canonical: CanonicalRequest
    model: TextModel
    stream: bool
    session_id: str | None
    svc_user_id: str | None
    headers: dict[str, str]  # forwarded protocol headers (anthropic-version, anthropic-beta)
    started_ms: int
    # The client's request body as it came (the fast path forwards these bytes with only `model` spliced in).
    raw_body: bytes = b""
    # Set by the pipeline from metering's answer.
    admission: Admission = NOT_ADMITTED
    # The canonical request was changed after decoding (own media inlined): the body cannot be forwarded as is.
    rewritten: bool = False
    # Headers every answer to this request carries (rate limits, then the cost); written by the pipeline alone.
    extra_response_headers: dict[str, str] = field(default_factory=dict)
    # Tracing (None when off): the request span's context.
    trace: Any = None
    # A Responses request with `store` true: what to keep of its answer (gateway/stored_responses.py).
    keep: ToKeep | None = None
    # The team's response cache is on: this request's use of it (gateway/cached.py); None: off.
    cache: Plan | None = None
    # The model's fallbacks and context fallbacks this key may use, in order (gateway/fallbacks.py).
    fallbacks: tuple[TextModel, ...] = ()
    context_fallbacks: tuple[TextModel, ...] = ()
    # A background response's attempt (None: a request answered as it is made).
    background_run: BackgroundRun | None = None


@dataclass(slots=True)
class Timings:
    """perf_counter() times of one request, for the latency metrics (`call_metrics`) only: arrival; the first
    upstream attempt's send (0: nothing was sent) and the answered call's; the time spent on attempts that
    failed before it (fallback); a stream's first output event; the end of the upstream's answer; and the
    time the stream relay spent on its chunks (the gateway's own work)."""

    arrived: float = 0.0
    first_attempt: float = 0.0
    upstream_sent: float = 0.0
    upstream_waited: float = 0.0
    first_output: float = 0.0
    upstream_done: float = 0.0
    relay_seconds: float = 0.0


@dataclass(slots=True)
class Relayed:
    """What a relay learned from the upstream's answer (and only the relay writes it)."""

    usage: Usage | None = None
    # The answer, for the request log of teams that keep payloads (a body, or the accumulated stream).
    result: Any = None
    # Why the answer failed: the upstream's error event, or a stream cut short (None: it ended well).
    error: str | None = None
    # The client hung up while the stream was relayed.
    hung_up: bool = False
    # Output relayed, to estimate output when a stream is abandoned without usage: characters of translated
    # output, and fast-path events relayed (each counted as about one token).
    produced_chars: int = 0
    relayed_events: int = 0


@dataclass(frozen=True, slots=True)
class Outcome:
    """How the request ended, for settlement and the request log; made by the pipeline."""

    status: RequestStatus = RequestStatus.SUCCESS
    http_status: int = 200
    usage: Usage | None = None
    error: str | None = None
    produced_chars: int = 0
    relayed_events: int = 0
    result: Any = None
    deployment: str | None = None  # the deployment that answered
    deployment_kind: str | None = None  # its upstream kind (cache prices on `anthropic` ones are derived)
    fast: bool = True
    # The request went to an upstream (whatever came back): a client that hangs up then is still billed.
    upstream_called: bool = False
    # A fallback model answered (billed at its prices, named in the log row); None: the requested model.
    served: TextModel | None = None


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused before it had a context (invalid body or headers, unknown model)."""

    request_id: str
    auth: AuthContext
    endpoint: str
    body: dict[str, Any] | None
    started_ms: int
    error: ServiceError
