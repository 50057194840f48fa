"""What the pipeline knows about one text request as it moves through the steps."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from modelport.accounts.auth import AuthContext
from modelport.catalog_spec import TextModel
from modelport.core.codec import ProtocolCodec, ProtocolName
from modelport.core.messages import CanonicalRequest
from modelport.core.usage import Usage
from modelport.errors import ServiceError
from modelport.requestlog.record import RequestStatus

CLIENT_GONE = "client disconnected"


@dataclass(slots=True)
class RequestContext:
    request_id: str
    endpoint: str  # chat.completions | responses | messages
    protocol: ProtocolName  # the client's wire protocol
    codec: ProtocolCodec
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
    # Filled in by admission (billing) and by the call.
    held_micros: int = 0
    # The output cap the team's credit allows when it cannot cover the model's maximum output; None: no cap
    # is added (the client's own, if any, goes upstream as it sent it).
    output_cap: int | None = None
    # The canonical request was changed after decoding (own media inlined): the body cannot be forwarded as is.
    rewritten: bool = False
    extra_response_headers: dict[str, str] = field(default_factory=dict)
    # perf_counter() times for the latency metrics: arrival, the answered upstream call's send, and the time
    # spent on upstream attempts that failed before it (fallback).
    arrived: float = 0.0
    upstream_sent: float = 0.0
    # The request went to an upstream (whatever came back): a client that hangs up then is still billed.
    upstream_called: bool = False
    upstream_waited: float = 0.0
    # Tracing (None when off): the request span's context, and the answered upstream attempt's span.
    trace: Any = None
    upstream_span: Any = None


@dataclass(slots=True)
class Outcome:
    """How the request ended, for settlement and the request log."""

    status: RequestStatus = RequestStatus.SUCCESS
    http_status: int = 200
    usage: Usage | None = None
    error: str | None = None
    # Text produced so far (characters), to estimate output when a stream is abandoned without usage.
    produced_chars: int = 0
    result: Any = None
    deployment: str | None = None
    fast: bool = True
    # perf_counter() times for the latency metrics: the first output event of a stream, the end of the
    # upstream's answer, and the time the stream relay spent on its chunks (the gateway's own work).
    first_output: float = 0.0
    upstream_done: float = 0.0
    relay_seconds: float = 0.0

    def fail(self, message: str, http_status: int | None = None) -> None:
        """The request failed: an error answer, or an error event that ended a committed stream."""
        self.status, self.error = RequestStatus.ERROR, message
        if http_status is not None:
            self.http_status = http_status

    def cancel(self, http_status: int | None = None) -> None:
        """The client went away; an error already recorded stays the reason."""
        if self.status == RequestStatus.SUCCESS:
            self.status, self.error = RequestStatus.CANCELLED, CLIENT_GONE
            if http_status is not None:
                self.http_status = http_status


@dataclass(frozen=True, slots=True)
class Refusal:
    """A request refused before it had a context (invalid body or headers, unknown model)."""

    request_id: str
    auth: AuthContext
    endpoint: str
    body: dict[str, Any] | None
    started_ms: int
    error: ServiceError
