"""Find a key of any team (`/console/admin/keys`) by its id, the start of its prefix, or the whole key.

The search is a POST, so a whole key pasted here never ends up in a URL (access logs, browser history); it
only reads, so an `operator_viewer` may send it too (`require_operator_reading`; the CSRF token as every
console form). Revoking a found key is `teams.revoke_key`, an `operator`'s form only.
"""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.console.deps import require_operator_reading
from modelport.console.operator.common import form_fields, page
from modelport.console.operator.queries import find_keys
from modelport.web.deps import get_services

router = APIRouter(prefix="/admin", dependencies=[Depends(require_operator_reading)])


@router.get("/keys")
async def keys_page(request: Request) -> Response:
    return page(request, "operator/keys.html", {"title": "Find a key", "active": "keys", "query": "", "keys": []})


@router.post("/keys")
async def find_keys_page(request: Request) -> Response:
    query = (await form_fields(request)).get("q", "")[:200]
    found = await find_keys(get_services(request).db, query) if query else []
    return page(request, "operator/keys.html", {"title": "Find a key", "active": "keys", "query": query, "keys": found})
