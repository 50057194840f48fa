"""SCIM 2.0 in this process (the media app over httpx's ASGI transport, on SQLite and PostgreSQL): the
same routes `test_scim_serve.py` drives through `serve`, here where coverage sees them."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.apps.assemble import build_services
from modelport.apps.media import create_media_app
from modelport.settings import ScimSettings, Settings

TOKEN = "scim-in-process-token-" + "y" * 40
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"


@pytest.fixture
async def scim(
    engine: AsyncEngine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[httpx.AsyncClient]:
    monkeypatch.setenv("IN_PROCESS_SCIM_TOKEN", TOKEN)
    settings = Settings(data_dir=tmp_path, scim=ScimSettings(token_env="IN_PROCESS_SCIM_TOKEN"))
    services = build_services(settings, engine=engine)
    transport = httpx.ASGITransport(app=create_media_app(services))
    headers = {"authorization": f"Bearer {TOKEN}"}
    try:
        async with httpx.AsyncClient(transport=transport, base_url="http://media.test/scim/v2", headers=headers) as c:
            yield c
    finally:
        await services.aclose()


def _ops(*ops: dict[str, Any]) -> dict[str, Any]:
    return {"schemas": [PATCH], "Operations": list(ops)}


async def test_users_groups_and_discovery_in_process(scim: httpx.AsyncClient) -> None:
    for path in ("/ServiceProviderConfig", "/ResourceTypes", "/Schemas"):
        assert (await scim.get(path)).status_code == 200, path
    wrong = await scim.get("/Users", headers={"authorization": "Bearer nope"})
    assert wrong.status_code == 401 and wrong.json()["schemas"] == [ERROR]

    body = {"schemas": [USER], "userName": "ada@example.com", "name": {"givenName": "Ada", "familyName": "L"}}
    made = await scim.post("/Users", json=body)
    assert made.status_code == 201, made.text
    user = made.json()
    assert user["userName"] == "ada@example.com" and user["name"]["givenName"] == "Ada" and user["active"] is True
    assert (await scim.post("/Users", json=body)).status_code == 409
    other = (await scim.post("/Users", json={"schemas": [USER], "userName": "bob@example.com"})).json()

    found = (await scim.get("/Users", params={"filter": 'userName eq "ADA@example.com"'})).json()
    assert found["totalResults"] == 1 and found["Resources"][0]["id"] == user["id"]
    paged = (await scim.get("/Users", params={"startIndex": 2, "count": 1})).json()
    assert paged["totalResults"] == 2 and len(paged["Resources"]) == 1
    assert (await scim.get("/Users", params={"filter": "userName sw 1"})).status_code == 400
    assert (await scim.get("/Users/usr_nope")).status_code == 404

    renamed = await scim.patch(
        f"/Users/{user['id']}", json=_ops({"op": "replace", "path": "name.givenName", "value": "A."})
    )
    assert renamed.status_code == 200 and renamed.json()["name"]["givenName"] == "A."
    off = await scim.patch(f"/Users/{user['id']}", json=_ops({"op": "replace", "value": {"active": False}}))
    assert off.status_code == 200 and off.json()["active"] is False
    bad = await scim.patch(f"/Users/{user['id']}", json=_ops({"op": "move", "path": "active"}))
    assert bad.status_code == 400 and bad.json()["scimType"] == "invalidSyntax"
    replaced = await scim.put(f"/Users/{user['id']}", json={**body, "active": True, "displayName": "Ada L."})
    assert replaced.status_code == 200 and replaced.json()["active"] is True
    version = replaced.json()["meta"]["version"]
    stale = await scim.put(f"/Users/{user['id']}", json=body, headers={"if-match": 'W/"stale"'})
    assert stale.status_code == 412
    assert (await scim.get(f"/Users/{user['id']}", headers={"if-none-match": version})).status_code == 304

    group = await scim.post(
        "/Groups", json={"schemas": [GROUP], "displayName": "ai-team", "members": [{"value": user["id"]}]}
    )
    assert group.status_code == 201, group.text
    gid = group.json()["id"]
    added = await scim.patch(
        f"/Groups/{gid}", json=_ops({"op": "add", "path": "members", "value": [{"value": other["id"]}]})
    )
    assert added.status_code in (200, 204)
    members = {m["value"] for m in (await scim.get(f"/Groups/{gid}")).json()["members"]}
    assert members == {user["id"], other["id"]}
    removed = await scim.patch(
        f"/Groups/{gid}", json=_ops({"op": "remove", "path": f'members[value eq "{user["id"]}"]'})
    )
    assert removed.status_code in (200, 204)
    assert {m["value"] for m in (await scim.get(f"/Groups/{gid}")).json()["members"]} == {other["id"]}
    listed = (await scim.get("/Groups", params={"filter": 'displayName eq "ai-team"'})).json()
    assert listed["totalResults"] == 1
    assert (await scim.delete(f"/Groups/{gid}")).status_code == 204
    assert (await scim.get(f"/Groups/{gid}")).status_code == 404

    assert (await scim.delete(f"/Users/{other['id']}")).status_code == 204
    assert (await scim.get(f"/Users/{other['id']}")).status_code == 404
