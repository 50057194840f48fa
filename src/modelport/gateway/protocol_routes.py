"""The gateway's protocol endpoints, one per registered protocol (`modelport.protocols.CODECS`): the ASGI
dispatch serves them and `routes.py` declares them for the OpenAPI document, both from this table."""

from __future__ import annotations

from modelport.core.codec import ProtocolCodec
from modelport.protocols import CODECS

BY_PATH: dict[str, ProtocolCodec] = {codec.route.path: codec for codec in CODECS.values()}
