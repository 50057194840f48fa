"""Wire protocols of the text gateway: the registry. Each subpackage builds its ``CODEC`` (a `ProtocolCodec`,
everything the gateway needs to know about the protocol); a new protocol is one package and one row here."""

from __future__ import annotations

from modelport.core.codec import ListedModel, ProtocolCodec, ProtocolName, UpstreamKindSpec
from modelport.errors import ServiceError
from modelport.protocols.anthropic_messages import CODEC as _MESSAGES
from modelport.protocols.openai_chat import CODEC as _CHAT
from modelport.protocols.openai_responses import CODEC as _RESPONSES

CODECS: dict[ProtocolName, ProtocolCodec] = {codec.name: codec for codec in (_CHAT, _RESPONSES, _MESSAGES)}
PROTOCOLS: tuple[ProtocolName, ...] = tuple(CODECS)
#: The text host's own error shape (its routes other than a protocol's, and connection-level refusals).
HOST_ERRORS = _CHAT
#: Every upstream kind the catalog may name: the protocol it speaks and its facts.
UPSTREAM_KINDS: dict[str, tuple[ProtocolCodec, UpstreamKindSpec]] = {
    kind: (codec, spec) for codec in CODECS.values() for kind, spec in codec.upstream_kinds.items()
}
#: Client headers other than ``Authorization`` that carry the key (Anthropic SDKs' ``x-api-key``).
KEY_HEADERS: tuple[str, ...] = tuple(dict.fromkeys(c.key_header for c in CODECS.values() if c.key_header))
_BY_PATH = tuple((codec.route.path, codec) for codec in CODECS.values())


def get_codec(name: str) -> ProtocolCodec:
    """The codec of protocol `name`; KeyError for an unknown name."""
    return CODECS[name]


def error_body_for_path(path: str, error: ServiceError) -> dict[str, object]:
    """`error` as the text host answers it on `path`: the protocol's shape on its routes and the paths below
    them (Messages' ``count_tokens``), OpenAI's elsewhere (docs/api/errors.md)."""
    codec = next((c for prefix, c in _BY_PATH if path.startswith(prefix)), HOST_ERRORS)
    return codec.error_body(
        error.text_message, error.error_type, code=error.code, param=error.param, status=error.status
    )


def model_entry(model: ListedModel) -> dict[str, object]:
    """A `GET /v1/models` entry every protocol's SDK reads (each protocol's fields, merged)."""
    entry: dict[str, object] = {}
    for codec in CODECS.values():
        entry.update(codec.model_fields(model))
    return entry


def model_list(data: list[dict[str, object]]) -> dict[str, object]:
    body: dict[str, object] = {}
    for codec in CODECS.values():
        body.update(codec.model_list_fields(data))
    return body
