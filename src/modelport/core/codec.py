"""What every wire protocol provides (Chat Completions, Responses, Messages), as data.

A protocol package ``modelport.protocols.<name>`` builds one `ProtocolCodec` (a frozen record of values
and functions, no forwarding methods) as its module-level ``CODEC``, and ``modelport.protocols`` lists the
packages (one row each). A codec owns every wire fact of its protocol: the client route it serves and its
OpenAPI schemas, the stream's final, error and output events, the response id prefix, the upstream kinds
that speak it (endpoint path, auth header, output cap field, default base URL), what an upstream call
needs added to its body and headers, the error body shape, how an upstream's error body and in-stream
error event are read. `gateway/` and `upstreams/` only ask it; `tests/unit/test_protocol_boundaries.py`
fails when a wire fact appears outside ``protocols/``.

The same codec serves both directions: inbound (client ↔ gateway: `decode_request`, `encode_response`,
`stream_encoder`) and outbound (gateway ↔ upstream of that kind: `encode_request`, `decode_response`,
`stream_decoder`).

Errors: `decode_request` raises `modelport.errors.InvalidParameters(detail, param=...)` naming the bad
field (dotted path with indexes, e.g. ``messages[1].content[0].image_url.url``). Decoders of upstream
bodies are lenient: they skip what they do not understand rather than fail a paid answer.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from modelport.core.events import StreamEvent
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse
from modelport.core.usage import Usage

#: A protocol's name (``openai_chat``, ``openai_responses``, ``anthropic_messages``): the codec's `name`,
#: `CanonicalRequest.source_protocol`, the key of `modelport.protocols.CODECS`.
ProtocolName = str


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


@dataclass(frozen=True, slots=True)
class UpstreamFault:
    """What an upstream's error body says (raw, unscrubbed: the gateway cleans it before anyone sees it)."""

    message: str | None = None
    param: str | None = None
    code: str | None = None
    #: The upstream does not know the model it was sent (the catalog is wrong, not the client's request).
    unknown_model: bool = False


@dataclass(frozen=True, slots=True)
class UpstreamKindSpec:
    """One catalog `kind` of text deployment that speaks this protocol."""

    #: The request field that caps the answer's length (fast path: added only when the team's credit cannot
    #: cover the model's maximum output and the client set no cap of its own).
    output_cap_field: str
    #: A model's maximum output when its catalog entry names none (the balance hold assumes it).
    default_max_output: int
    #: Base URL when the deployment names none (None: `base_url` is required, or no HTTP at all).
    default_base_url: str | None = None
    #: The headers that carry the deployment's API key.
    auth_headers: Callable[[str], dict[str, str]] = lambda key: {"authorization": f"Bearer {key}"}
    #: Path (below the base URL) of the upstream's own input-token counting endpoint, if it has one.
    count_tokens_path: str | None = None
    #: Path (below the base URL) of the upstream's model list: a free call, what a health probe sends.
    models_path: str = "/models"


@dataclass(frozen=True, slots=True)
class ClientRoute:
    """The gateway endpoint a protocol's clients call."""

    path: str
    endpoint: str  # the request log's `endpoint`
    operation: str  # the OpenAPI operation's name
    summary: str
    body_ref: str  # what the request body is, in the OpenAPI document


@dataclass(frozen=True, slots=True)
class TokenCount:
    """A protocol's input-token counting endpoint (Messages' ``count_tokens``), served by the gateway."""

    path: str
    summary: str
    #: The client's body → the canonical request it would make (validated as the route's requests are).
    decode_request: Callable[[dict[str, Any], Mapping[str, str]], CanonicalRequest]
    #: What an upstream kind's own counting endpoint (`UpstreamKindSpec.count_tokens_path`) is sent.
    upstream_body: Callable[[dict[str, Any], str], dict[str, Any]]
    #: The count in that endpoint's answer (None: not a count).
    read_count: Callable[[bytes], int | None]
    #: The request body's required fields (OpenAPI), and the protocol's fields of the answer beside the count.
    required_fields: tuple[str, ...] = ("model", "messages")
    answer_fields: Mapping[str, Any] = field(default_factory=dict)


class DecodeRequest(Protocol):
    def __call__(self, body: dict[str, Any], headers: Mapping[str, str] | None = None) -> CanonicalRequest:
        """The client's body → the canonical request. `headers` are the client's request headers (a protocol
        whose body rules depend on one, such as Messages' `anthropic-beta`, reads them)."""
        ...


class EncodeResponse(Protocol):
    def __call__(
        self, resp: CanonicalResponse, model: str, *, request: CanonicalRequest | None = None
    ) -> dict[str, Any]:
        """`request`, when given, is the client's request: protocols whose responses echo request settings
        (Responses: instructions, tools, max_output_tokens...) echo them from it."""
        ...


class MakeStreamEncoder(Protocol):
    def __call__(
        self, model: str, response_id: str, include_usage: bool, *, request: CanonicalRequest | None = None
    ) -> StreamEncoder: ...


class PrepareUpstreamBody(Protocol):
    def __call__(self, body: dict[str, Any], *, stream: bool, fast: bool) -> bool:
        """Adjust a body about to be sent to an upstream of this protocol, in place. Returns True when the
        relay must drop usage-only events the client did not ask for (`is_usage_only`): the upstream was
        asked for usage so the stream can be billed."""
        ...


class ErrorBody(Protocol):
    def __call__(
        self, message: str, type: str, *, code: str | None = None, param: str | None = None, status: int | None = None
    ) -> dict[str, Any]:
        """A JSON error body in this protocol's shape, carrying `type`, the interface's error type (one table
        for every endpoint, docs/api/errors.md). `status` is the HTTP status the body goes with, for a
        protocol whose shape needs it."""
        ...


class ListedModel(Protocol):
    """What a model list entry is made of (`catalog_spec.TextModel`)."""

    @property
    def id(self) -> str: ...
    @property
    def provider(self) -> str: ...
    @property
    def display_name(self) -> str | None: ...
    @property
    def created_at(self) -> int: ...
    @property
    def context_window(self) -> int | None: ...
    @property
    def max_output_tokens(self) -> int | None: ...


EventTest = Callable[[str | None, str], bool]


def _no_fields(*_: Any) -> dict[str, Any]:
    return {}


def _never(data: str) -> bool:
    return False


@dataclass(frozen=True, slots=True)
class ConversationWire:
    """How a protocol with server-kept conversations (Responses' `conversation`, `/v1/conversations`)
    words them; the gateway keeps the rows (`gateway/conversations.py`)."""

    #: The conversation a request continues (None: none; a bad value is InvalidParameters).
    conversation_ref: Callable[[dict[str, Any]], str | None]
    #: A create body -> (metadata, first items); an update body -> metadata; an add body -> items.
    create_body: Callable[[dict[str, Any]], tuple[dict[str, Any], list[dict[str, Any]]]]
    update_body: Callable[[dict[str, Any]], dict[str, Any]]
    add_items_body: Callable[[dict[str, Any]], list[dict[str, Any]]]
    #: (the request's own input items, response object) -> the items the turn adds to its conversation.
    turn_items: Callable[[list[Any], dict[str, Any]], list[dict[str, Any]]]
    #: A new id for an item that has none (or one its conversation has already).
    new_item_id: Callable[[dict[str, Any]], str]
    #: (id, created_at_ms, metadata) -> the conversation object; id -> the deletion's answer.
    conversation_object: Callable[[str, int, dict[str, Any]], dict[str, Any]]
    deleted: Callable[[str], dict[str, Any]]
    #: Items just added, as a list body; a page of items (limit, after, order) as a list body.
    item_list: Callable[[list[dict[str, Any]]], dict[str, Any]]
    page: Callable[..., dict[str, Any]]
    unknown_conversation: Callable[[str], Exception]
    unknown_item: Callable[[str], Exception]


@dataclass(frozen=True, slots=True)
class BackgroundWire:
    """How a protocol with background responses (Responses' `background: true`) words them; the gateway
    keeps and runs them (`gateway/background_responses.py`)."""

    #: The request asks to run in the background (a bad value is InvalidParameters).
    asks: Callable[[dict[str, Any]], bool]
    #: The error for a background request whose answer would not be stored.
    unstored: Callable[[], Exception]
    #: The body a background run sends through the gateway (a stream, not in the background).
    run_body: Callable[[dict[str, Any]], dict[str, Any]]
    #: (response id, model, the decoded request) -> the response object answered at once (queued).
    queued: Callable[[str, str, CanonicalRequest], dict[str, Any]]
    #: (response object, status, error or None) -> the object with that status.
    with_status: Callable[..., dict[str, Any]]
    #: A failed run's error, as the response object carries it; the error of a run cut short.
    error_of: Callable[[Any], dict[str, Any]]
    interrupted: Callable[[], dict[str, Any]]
    #: (event data, response id, sequence number) -> the event as the background client sees it.
    event: Callable[[dict[str, Any], str, int], dict[str, Any]]
    #: (event name, event data) -> (status, final response object) when the event ends the run.
    final: Callable[[str | None, dict[str, Any]], tuple[str, dict[str, Any]] | None]
    #: (failed response object, response id, sequence number) -> (event name, data) ending a failed run's
    #: stream; (event name, event data) -> the error an in-stream error event reports (None: not one).
    failed_event: Callable[[dict[str, Any], str, int], tuple[str, dict[str, Any]]]
    error_in: Callable[[str | None, dict[str, Any]], dict[str, Any] | None]
    #: The statuses a background response ends in.
    finished: frozenset[str]
    #: The errors for cancelling a response that is not a background one, or one finished already.
    not_background: Callable[[], Exception]
    finished_already: Callable[[str], Exception]


@dataclass(frozen=True, slots=True)
class ServerState:
    """How a protocol whose clients keep conversation state at the server (Responses: `store`,
    `previous_response_id`) names it; the gateway keeps the state (`gateway/stored_responses.py`)."""

    #: The request's reference to an earlier response (None: none; a bad value is InvalidParameters).
    previous_id: Callable[[dict[str, Any]], str | None]
    #: The request asks for its answer to be kept.
    keeps: Callable[[dict[str, Any]], bool]
    #: The request's own input, as items.
    input_items: Callable[[dict[str, Any]], list[Any]]
    #: The request with `earlier` items before its own input and no reference left to an earlier response.
    chain: Callable[[dict[str, Any], list[Any]], dict[str, Any]]
    #: The output items of a kept response object.
    output_items: Callable[[dict[str, Any]], list[Any]]
    #: The response object a stream event carries when it is the stream's final one (else None).
    final_response: Callable[[str | None, str], dict[str, Any] | None]
    #: The error for a reference to a response the team does not have.
    unknown_previous: Callable[[str], Exception]
    #: The id of a response object (None: it has none).
    response_id: Callable[[dict[str, Any]], str | None]
    #: A page of a kept request's input items: (response id, items, limit, after, order) -> the list body.
    items_page: Callable[[str, list[Any], int, str | None, str], dict[str, Any]]
    #: The answer to a deletion of a kept response.
    deleted: Callable[[str], dict[str, Any]]
    #: Conversations kept at the server (None: the protocol has none).
    conversations: ConversationWire | None = None
    #: Background responses (None: the protocol has none).
    background: BackgroundWire | None = None
    #: Bytes every final stream event holds (its name): the keeper parses a stream only from the event
    #: that holds one (`core/sse_skim.py`); empty: it parses every event.
    final_markers: tuple[bytes, ...] = ()


@dataclass(frozen=True, slots=True)
class ProtocolCodec:
    name: ProtocolName
    route: ClientRoute
    #: Prefix of the ids of responses the gateway makes (``chatcmpl-``, ``resp_``, ``msg_``).
    response_id_prefix: str
    #: The endpoint path below an upstream's base URL.
    upstream_path: str
    #: The catalog's upstream kinds that speak this protocol.
    upstream_kinds: Mapping[str, UpstreamKindSpec]
    #: Client request headers this protocol's upstreams need (forwarded when the upstream speaks it).
    forwarded_headers: tuple[str, ...]
    #: Every request field that caps the answer's length (Chat has two).
    output_cap_fields: tuple[str, ...]
    #: The upstream refuses a request without an output cap: a translated request that has none gets the
    #: model's maximum output.
    requires_output_cap: bool
    #: This SSE event ends a stream of this protocol (successfully or with an error event).
    is_terminal: EventTest
    #: This SSE event reports an error inside a stream of this protocol.
    is_error_event: EventTest
    #: This SSE event carries model output (text, reasoning, a tool call): the first one times the
    #: time-to-first-token metric. Asked only until it first answers True.
    carries_output: EventTest
    #: The message of an in-stream error event (None: it names none).
    error_event_message: Callable[[str], str | None]
    prepare_upstream_body: PrepareUpstreamBody
    #: Protocol headers for an upstream call, from the forwarded client headers.
    upstream_headers: Callable[[Mapping[str, str]], dict[str, str]]
    #: What an upstream error body of this protocol says (None: not this protocol's error shape).
    upstream_fault: Callable[[bytes], UpstreamFault | None]
    decode_request: DecodeRequest
    encode_request: Callable[[CanonicalRequest, str], dict[str, Any]]
    decode_response: Callable[[dict[str, Any]], CanonicalResponse]
    encode_response: EncodeResponse
    stream_decoder: Callable[[], StreamDecoder]
    stream_encoder: MakeStreamEncoder
    usage_from_body: Callable[[dict[str, Any]], Usage | None]
    usage_sniffer: Callable[[], UsageSniffer]
    error_body: ErrorBody
    #: OpenAPI JSON Schemas of the route's request and (non-stream) response bodies.
    request_schema: Mapping[str, Any] = field(default_factory=dict)
    response_schema: Mapping[str, Any] = field(default_factory=dict)
    #: A relayed SSE data line that carries only the usage the gateway asked for (see `prepare_upstream_body`).
    is_usage_only: Callable[[str], bool] = _never
    token_count: TokenCount | None = None
    #: A client header other than ``Authorization: Bearer`` this protocol's SDKs send the key in.
    key_header: str | None = None
    #: The fields this protocol's SDKs read in a `GET /v1/models` entry and around its list (`data` given):
    #: the gateway answers every protocol's fields at once.
    model_fields: Callable[[ListedModel], dict[str, Any]] = _no_fields
    model_list_fields: Callable[[list[dict[str, Any]]], dict[str, Any]] = _no_fields
    #: Conversation state kept at the server for this protocol's clients (None: the protocol has none).
    server_state: ServerState | None = None
    #: Request fields kept in `CanonicalRequest.extras` that cannot change the answer (how it is streamed or
    #: kept): left out of the response cache's key (`response_cache/key.py`).
    cache_neutral: frozenset[str] = frozenset()
