"""The media host's success envelope `{"code": 0, "message": "success", "data": ...}`.

Encoded with msgspec so `Decimal` money goes out as an exact JSON number (no float in between).
"""

from __future__ import annotations

from typing import Any

import msgspec
from starlette.responses import Response

_encoder = msgspec.json.Encoder(decimal_format="number")


def encode_json(value: Any) -> bytes:
    return _encoder.encode(value)


class JSONBytesResponse(Response):
    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return encode_json(content)


def ok(data: Any, *, message: str = "success", status_code: int = 200) -> Response:
    return JSONBytesResponse({"code": 0, "message": message, "data": data}, status_code=status_code)
