"""A stored answer replayed in the client's protocol: as a body, or as the protocol's stream of events in
order (never one lump), with a fresh id and creation time, whatever way it was first produced.

Stored answers are bodies of the client's protocol (the key names the protocol); the client codec decodes
one to the canonical response and encodes it again with the request's own echoes (`encode_response`) or
drives its stream encoder with the events a streaming upstream would have sent (text in small deltas).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import orjson

from modelport.core.accumulate import events_from_response
from modelport.core.codec import ProtocolCodec
from modelport.core.events import ReasoningDelta, RefusalDelta, StreamEvent, TextDelta
from modelport.core.messages import CanonicalRequest
from modelport.core.response import CanonicalResponse

# Characters per replayed delta (a few tokens: a client's stream handling sees a stream, not one event).
DELTA_CHARS = 64


def fresh_response(
    codec: ProtocolCodec, body: dict[str, Any], model: str, response_id: str, created: int | None = None
) -> CanonicalResponse:
    response = codec.decode_response(body)
    response.id = response_id
    response.model = model
    response.created = int(time.time()) if created is None else created
    return response


def replay_body(codec: ProtocolCodec, request: CanonicalRequest, response: CanonicalResponse) -> bytes:
    return orjson.dumps(codec.encode_response(response, request.model, request=request))


def replay_stream(codec: ProtocolCodec, request: CanonicalRequest, response: CanonicalResponse) -> Iterator[bytes]:
    """The stream's frames, one chunk per canonical event, then the protocol's final frames."""
    encoder = codec.stream_encoder(request.model, response.id, request.include_usage, request=request)
    for event in _small_deltas(events_from_response(response)):
        frame = encoder.encode(event)
        if frame:
            yield frame
    yield encoder.close()


def _small_deltas(events: list[StreamEvent]) -> Iterator[StreamEvent]:
    for event in events:
        if isinstance(event, TextDelta) and len(event.text) > DELTA_CHARS and event.logprobs is None:
            for piece in _pieces(event.text):
                yield TextDelta(event.index, piece)
        elif isinstance(event, RefusalDelta) and len(event.text) > DELTA_CHARS:
            for piece in _pieces(event.text):
                yield RefusalDelta(event.index, piece)
        elif isinstance(event, ReasoningDelta) and len(event.text) > DELTA_CHARS and event.redacted is None:
            pieces = list(_pieces(event.text))
            for piece in pieces[:-1]:
                yield ReasoningDelta(index=event.index, text=piece, id=event.id)
            # The signature and encrypted content close the part, after its text.
            yield ReasoningDelta(
                index=event.index,
                text=pieces[-1],
                signature=event.signature,
                id=event.id,
                encrypted_content=event.encrypted_content,
            )
        else:
            yield event


def _pieces(text: str) -> Iterator[str]:
    for start in range(0, len(text), DELTA_CHARS):
        yield text[start : start + DELTA_CHARS]
