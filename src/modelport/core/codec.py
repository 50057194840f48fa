"""The interface every wire protocol implements (Chat Completions, Responses, Messages).

A protocol package ``modelport.protocols.<name>`` exposes a module-level ``CODEC`` object satisfying
`ProtocolCodec`; `modelport.protocols.get_codec(name)` finds it. A codec also owns its protocol's wire
facts (the stream's final and error events, the response id prefix, the upstream endpoint path, what an
upstream call needs added to its body and headers, the error body shape), so `gateway/` never compares
protocol names. The same codec serves both directions:
inbound (client ↔ gateway: `decode_request`, `encode_response`, `stream_encoder`) and outbound
(gateway ↔ upstream of that kind: `encode_request`, `decode_response`, `stream_decoder`).

Errors: `decode_request` raises `modelport.errors.InvalidParameters(detail, param=...)` naming the bad
field (dotted path with indexes, e.g. ``messages[1].content[0].image_url.url``). Decoders of upstream
bodies are lenient: they skip what they do not understand rather than fail a paid answer.
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Any, Protocol

from modelport.core.events import StreamEvent
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.core.usage import Usage


class ProtocolName(StrEnum):
    OPENAI_CHAT = "openai_chat"
    OPENAI_RESPONSES = "openai_responses"
    ANTHROPIC_MESSAGES = "anthropic_messages"


class StreamDecoder(Protocol):
    """Upstream SSE → canonical events. One parsed SSE event per `feed` call."""

    def feed(self, event: str | None, data: str) -> list[StreamEvent]: ...

    def close(self) -> list[StreamEvent]:
        """The upstream stream ended (after its last event); flush anything pending."""
        ...


class StreamEncoder(Protocol):
    """Canonical events → client SSE bytes (complete frames; may be empty)."""

    def encode(self, event: StreamEvent) -> bytes: ...

    def close(self) -> bytes:
        """Final frames (e.g. ``data: [DONE]``). Call once, after the last event."""
        ...

    def error(self, message: str, type: str = "api_error") -> bytes:
        """The protocol's in-stream error frame(s); the caller then ends the stream (no `close`)."""
        ...


class UsageSniffer(Protocol):
    """Fast path: watch raw upstream SSE events of this protocol and remember the latest usage."""

    def feed(self, event: str | None, data: str) -> None: ...

    @property
    def usage(self) -> Usage | None: ...


class ProtocolCodec(Protocol):
    name: ProtocolName
    #: Prefix of the ids of responses the gateway makes (``chatcmpl-``, ``resp_``, ``msg_``).
    response_id_prefix: str
    #: The endpoint path below an upstream's base URL.
    upstream_path: str
    #: Client request headers this protocol's upstreams need (forwarded when the upstream speaks it).
    forwarded_headers: tuple[str, ...]
    #: The upstream refuses a request without an output cap (the catalog's default is sent).
    requires_output_cap: bool

    def is_terminal(self, event: str | None, data: str) -> bool:
        """This SSE event ends a stream of this protocol (successfully or with an error event)."""
        ...

    def is_error_event(self, event: str | None, data: str) -> bool:
        """This SSE event reports an error inside a stream of this protocol."""
        ...

    def carries_output(self, event: str | None, data: str) -> bool:
        """This SSE event carries model output (text, reasoning, a tool call): the first one times the
        time-to-first-token metric. Asked only until it first answers True."""
        ...

    def prepare_upstream_body(self, body: dict[str, Any], *, stream: bool, fast: bool) -> bool:
        """Adjust a body about to be sent to an upstream of this protocol, in place. Returns True when the
        relay must drop a usage-only chunk the client did not ask for (the upstream was asked for usage so
        the stream can be billed)."""
        ...

    def upstream_headers(self, client_headers: Mapping[str, str]) -> dict[str, str]:
        """Protocol headers for an upstream call, from the forwarded client headers."""
        ...

    def decode_request(self, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> CanonicalRequest:
        """The client's body → the canonical request. `headers` are the client's request headers (a protocol
        whose body rules depend on one, such as Messages' `anthropic-beta`, reads them)."""
        ...

    def encode_request(self, req: CanonicalRequest, upstream_model: str) -> dict[str, Any]: ...

    def decode_response(self, body: dict[str, Any]) -> CanonicalResponse: ...

    def encode_response(
        self, resp: CanonicalResponse, model: str, *, request: CanonicalRequest | None = None
    ) -> dict[str, Any]:
        """`request`, when given, is the client's request: protocols whose responses echo request settings
        (Responses: instructions, tools, max_output_tokens...) echo them from it."""
        ...

    def stream_decoder(self) -> StreamDecoder: ...

    def stream_encoder(
        self, model: str, response_id: str, include_usage: bool, *, request: CanonicalRequest | None = None
    ) -> StreamEncoder: ...

    def usage_from_body(self, body: dict[str, Any]) -> Usage | None: ...

    def usage_sniffer(self) -> UsageSniffer: ...

    def error_body(
        self, message: str, type: str, *, code: str | None = None, param: str | None = None, status: int | None = None
    ) -> dict[str, Any]:
        """A JSON error body in this protocol's shape (for clients of this protocol), carrying `type`, the
        interface's error type (one table for every endpoint, docs/api/errors.md). `status` is the HTTP status
        the body goes with, for a protocol whose shape needs it."""
        ...


def openai_error_body(message: str, type: str, *, code: str | None = None, param: str | None = None) -> dict[str, Any]:
    """OpenAI's error shape (Chat Completions and Responses): ``param`` and ``code`` always present, null
    when unknown, as the real API sends them."""
    return {"error": {"message": message, "type": type, "param": param, "code": code}}
