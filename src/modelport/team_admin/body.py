"""The JSON body of a team admin's request: an empty body is None, anything not JSON a 400 naming `body`."""

from __future__ import annotations

from typing import Any

import orjson
from starlette.requests import Request

from modelport.errors import InvalidParameters


async def json_body(request: Request) -> Any:
    raw = await request.body()
    if not raw.strip():
        return None
    try:
        return orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise InvalidParameters(f"the request body is not valid JSON: {exc.msg}", param="body") from None
