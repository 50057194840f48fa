"""`DELETE /api/v1/cache`: a team admin purges every answer the team's response cache holds (docs/api/cache.md);
a member key gets 403. The operator's purge is `DELETE /admin/v1/teams/{team}/cache` (`operator.verbs`)."""

from __future__ import annotations

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts import audit
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission
from modelport.response_cache import RESPONSE_CACHE
from modelport.web.actor import request_actor
from modelport.web.deps import get_services, media_auth_with
from modelport.web.envelope import ok

router = APIRouter(prefix="/api/v1", tags=["cache"])


@router.delete("/cache", summary="Purge the team's response cache (admin keys only)")
async def purge_cache(
    request: Request, auth: AuthContext = Depends(media_auth_with(Permission.PURGE_CACHE))
) -> Response:
    services = get_services(request)
    gone = await services[RESPONSE_CACHE].purge(auth.team_id)
    async with services.db.begin() as conn:
        actor = request_actor(request, "team_key", key_id=auth.key_id)
        after = {"entries_purged": gone}
        await audit.record(conn, actor, "team.cache_purge", team_id=auth.team_id, target=auth.team_id, after=after)
    return ok({"entries_purged": gone})
