"""SCIM 2.0 provisioning through a real `modelport serve --workers 2` (issue 38): every endpoint, every
refusal in SCIM's error shape, deactivation that ends a live console session on either process, and the
main flow on PostgreSQL too."""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.accounts import admin, close_browsers, server_on, set_password, sign_in
from tests.support.server import RunningServer, run_server, server_env

ADMIN = "scim-admin-token-0123456789-abcdefgh"
SCIM_TOKEN = "scim-bearer-token-" + "x" * 40
REDIS_URL = os.environ.get("MODELPORT_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ENV = {"MODELPORT_ADMIN_TOKEN": ADMIN, "MODELPORT_SCIM__TOKEN_ENV": "IDP_SCIM_TOKEN", "IDP_SCIM_TOKEN": SCIM_TOKEN}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    env = {
        **ENV,
        "MODELPORT_REDIS_URL": REDIS_URL,
        "MODELPORT_RATELIMIT_PREFIX": "mp-test-scim-" + secrets.token_hex(4),
    }
    with run_server(tmp_path_factory.mktemp("scim"), "--workers", "2", env=env) as running:
        yield running
    close_browsers()


def scim(server: RunningServer, method: str, path: str, *, token: str = SCIM_TOKEN, **kwargs: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/scim+json"}
    return httpx.request(method, server.media_url + "/scim/v2" + path, headers=headers, timeout=30, **kwargs)


def is_error(answer: httpx.Response, status: int, scim_type: str | None = None) -> bool:
    body = answer.json()
    assert answer.headers["content-type"].startswith("application/scim+json"), answer.headers
    assert body["schemas"] == [ERROR] and body["status"] == str(status), body
    return answer.status_code == status and body.get("scimType") == scim_type


def new_user(server: RunningServer, email: str, **extra: Any) -> dict[str, Any]:
    body = {"schemas": [USER], "userName": email, "name": {"givenName": "Ada", "familyName": "L"}, **extra}
    made = scim(server, "POST", "/Users", json=body)
    assert made.status_code == 201, made.text
    return dict(made.json())


def patch(server: RunningServer, path: str, *ops: dict[str, Any]) -> httpx.Response:
    return scim(server, "PATCH", path, json={"schemas": [PATCH], "Operations": list(ops)})


def test_no_or_a_wrong_token_is_a_401_in_scim_shape(server: RunningServer) -> None:
    bare = httpx.get(server.media_url + "/scim/v2/Users")
    assert is_error(bare, 401) and bare.headers["www-authenticate"].startswith("Bearer")
    assert is_error(scim(server, "GET", "/Users", token=SCIM_TOKEN[:-1] + "y"), 401)
    assert is_error(scim(server, "GET", "/Users", token=ADMIN), 401)  # the admin token is not the SCIM token


def test_users_are_created_read_listed_filtered_and_paged(server: RunningServer) -> None:
    made = new_user(server, "Ada@Example.com", externalId="okta-ada")
    assert made["userName"] == "Ada@Example.com" and made["active"] is True and made["externalId"] == "okta-ada"
    assert made["name"]["formatted"] == "Ada L" and made["emails"][0]["value"] == "Ada@Example.com"
    meta = made["meta"]
    assert meta["resourceType"] == "User" and meta["location"].endswith("/scim/v2/Users/" + made["id"])
    assert meta["version"].startswith('W/"') and meta["created"].endswith("Z") and meta["lastModified"]
    got = scim(server, "GET", f"/Users/{made['id']}")
    assert got.status_code == 200 and got.json() == made and got.headers["etag"] == meta["version"]
    # userName is compared case-insensitively, as an email
    found = scim(server, "GET", "/Users", params={"filter": 'userName eq "ada@example.COM"'}).json()
    assert found["totalResults"] == 1 and [u["id"] for u in found["Resources"]] == [made["id"]]
    by_external = scim(server, "GET", "/Users", params={"filter": 'externalId eq "okta-ada"'}).json()
    assert [u["id"] for u in by_external["Resources"]] == [made["id"]]
    none = scim(server, "GET", "/Users", params={"filter": 'userName eq "nobody@example.com"'}).json()
    assert none["totalResults"] == 0 and none["Resources"] == []
    for n in range(3):
        new_user(server, f"page{n}@example.com")
    everyone = scim(server, "GET", "/Users").json()
    page = scim(server, "GET", "/Users", params={"startIndex": "2", "count": "2"}).json()
    assert page["startIndex"] == 2 and page["itemsPerPage"] == 2 and page["totalResults"] == everyone["totalResults"]
    assert [u["id"] for u in page["Resources"]] == [u["id"] for u in everyone["Resources"][1:3]]
    # operators see the SCIM user like any other
    listed = admin(server, ADMIN, "GET", f"/users/{made['id']}").json()["data"]
    assert listed["email"] == "Ada@Example.com" and listed["status"] == "active"


def test_refusals_bad_filter_unknown_id_duplicate_username_bad_body(server: RunningServer) -> None:
    assert is_error(scim(server, "GET", "/Users", params={"filter": 'userName co "a"'}), 400, "invalidFilter")
    assert is_error(scim(server, "GET", "/Users", params={"filter": 'title eq "x"'}), 400, "invalidFilter")
    assert is_error(scim(server, "GET", "/Groups", params={"filter": "displayName pr"}), 400, "invalidFilter")
    assert is_error(scim(server, "GET", "/Users/usr_nope"), 404)
    assert is_error(scim(server, "GET", "/Groups/grp_nope"), 404)
    assert is_error(scim(server, "DELETE", "/Users/usr_nope"), 404)
    assert is_error(patch(server, "/Users/usr_nope", {"op": "replace", "path": "active", "value": False}), 404)
    new_user(server, "twice@example.com")
    again = scim(server, "POST", "/Users", json={"schemas": [USER], "userName": "TWICE@example.com"})
    assert is_error(again, 409, "uniqueness")
    assert is_error(scim(server, "POST", "/Users", json={"schemas": [USER]}), 400, "invalidValue")
    assert is_error(scim(server, "POST", "/Users", content=b"not json"), 400, "invalidSyntax")
    group = scim(server, "POST", "/Groups", json={"schemas": [GROUP], "displayName": "dup-group"})
    assert group.status_code == 201
    twin = scim(server, "POST", "/Groups", json={"schemas": [GROUP], "displayName": "DUP-group"})
    assert is_error(twin, 409, "uniqueness")
    bad_member = scim(server, "POST", "/Groups", json={"displayName": "g2", "members": [{"value": "usr_nope"}]})
    assert is_error(bad_member, 400, "invalidValue")
    user = new_user(server, "badpatch@example.com")
    assert is_error(patch(server, f"/Users/{user['id']}", {"op": "move", "path": "active"}), 400, "invalidSyntax")
    bad_path = patch(server, f"/Users/{user['id']}", {"op": "replace", "path": "title", "value": "x"})
    assert is_error(bad_path, 400, "invalidPath")


def test_put_and_patch_change_a_user(server: RunningServer) -> None:
    user = new_user(server, "change@example.com")
    put = scim(
        server,
        "PUT",
        f"/Users/{user['id']}",
        json={
            "schemas": [USER],
            "userName": "changed@example.com",
            "name": {"formatted": "Grace H"},
            "externalId": "e1",
        },
    )
    assert put.status_code == 200, put.text
    assert put.json()["userName"] == "changed@example.com" and put.json()["name"]["formatted"] == "Grace H"
    assert put.json()["meta"]["version"] != user["meta"]["version"]
    with_path = patch(server, f"/Users/{user['id']}", {"op": "replace", "path": "name.formatted", "value": "G. H."})
    assert with_path.json()["name"]["formatted"] == "G. H."
    without_path = patch(
        server,
        f"/Users/{user['id']}",
        {"op": "replace", "value": {"emails": [{"value": "grace@example.com", "primary": True}], "active": "False"}},
    )  # Entra ID's string booleans
    assert without_path.status_code == 200, without_path.text
    # the userName stays as sent; the account's address follows the primary email
    assert without_path.json()["userName"] == "changed@example.com" and without_path.json()["active"] is False
    assert without_path.json()["emails"] == [{"value": "grace@example.com", "primary": True}]
    account = admin(server, ADMIN, "GET", f"/users/{user['id']}").json()["data"]
    assert account["status"] == "disabled" and account["email"] == "grace@example.com"
    back = patch(server, f"/Users/{user['id']}", {"op": "replace", "path": "active", "value": True})
    assert back.json()["active"] is True
    assert admin(server, ADMIN, "GET", f"/users/{user['id']}").json()["data"]["status"] == "active"
    events = admin(server, ADMIN, "GET", "/audit", params={"actor_kind": "scim"}).json()["data"]
    actions = {e["action"] for e in events["events"] if e["target"] == user["id"]}
    assert {"user.create", "user.disable", "user.enable", "user.scim_update"} <= actions


def test_groups_and_their_members(server: RunningServer) -> None:
    one, two = new_user(server, "g-one@example.com"), new_user(server, "g-two@example.com")
    made = scim(
        server,
        "POST",
        "/Groups",
        json={"schemas": [GROUP], "displayName": "ai-team", "members": [{"value": one["id"]}]},
    )
    assert made.status_code == 201, made.text
    group = made.json()
    assert group["meta"]["resourceType"] == "Group" and [m["value"] for m in group["members"]] == [one["id"]]
    path = f"/Groups/{group['id']}"
    added = patch(server, path, {"op": "add", "path": "members", "value": [{"value": two["id"]}]})
    assert sorted(m["value"] for m in added.json()["members"]) == sorted([one["id"], two["id"]])
    removed = patch(server, path, {"op": "remove", "path": f'members[value eq "{one["id"]}"]'})
    assert [m["value"] for m in removed.json()["members"]] == [two["id"]]
    replaced = patch(server, path, {"op": "replace", "path": "members", "value": [{"value": one["id"]}]})
    assert [m["value"] for m in replaced.json()["members"]] == [one["id"]]
    renamed = patch(server, path, {"op": "replace", "value": {"id": group["id"], "displayName": "ai-team-2"}})
    assert renamed.json()["displayName"] == "ai-team-2"
    put = scim(
        server, "PUT", path, json={"schemas": [GROUP], "displayName": "ai-team", "members": [{"value": two["id"]}]}
    )
    assert put.json()["displayName"] == "ai-team" and [m["value"] for m in put.json()["members"]] == [two["id"]]
    assert scim(server, "GET", path).json() == put.json()
    listed = scim(server, "GET", "/Groups", params={"filter": 'displayName eq "ai-team"'}).json()
    assert [g["id"] for g in listed["Resources"]] == [group["id"]]
    assert scim(server, "DELETE", path).status_code == 204
    assert is_error(scim(server, "GET", path), 404)


def test_discovery_endpoints(server: RunningServer) -> None:
    config = scim(server, "GET", "/ServiceProviderConfig").json()
    assert config["patch"]["supported"] is True and config["bulk"]["supported"] is False
    types = scim(server, "GET", "/ResourceTypes").json()
    assert {t["id"]: t["endpoint"] for t in types["Resources"]} == {"User": "/Users", "Group": "/Groups"}
    assert scim(server, "GET", "/ResourceTypes/User").json()["schema"] == USER
    schemas = scim(server, "GET", "/Schemas").json()
    assert {s["id"] for s in schemas["Resources"]} == {USER, GROUP}
    assert scim(server, "GET", f"/Schemas/{USER}").json()["name"] == "User"
    assert is_error(scim(server, "GET", "/Schemas/urn:nope"), 404)


def test_deactivation_and_delete_end_a_live_session_on_either_process(server: RunningServer) -> None:
    assert admin(server, ADMIN, "POST", "/teams", json={"name": "scim-team"}).status_code == 200
    for email, ending in (("leaver@example.com", "deactivate"), ("deleted@example.com", "delete")):
        user = new_user(server, email)
        link = admin(server, ADMIN, "POST", f"/users/{user['id']}/reset-link").json()["data"]["url"]
        assert admin(server, ADMIN, "POST", "/teams/scim-team/members", json={"email": email, "role": "developer"})
        set_password(server, link)
        cookie = sign_in(server, email).http.cookies["modelport_console"]

        def page(session: str = cookie) -> int:
            # A new connection each time: the two serving processes share the listening socket.
            with httpx.Client(base_url=server.media_url + "/console", cookies={"modelport_console": session}) as fresh:
                return fresh.get("/").status_code

        assert [page() for _ in range(6)] == [200] * 6
        if ending == "deactivate":
            done = patch(server, f"/Users/{user['id']}", {"op": "replace", "path": "active", "value": False})
            assert done.status_code == 200
        else:
            assert scim(server, "DELETE", f"/Users/{user['id']}").status_code == 204
        ended_at = time.monotonic()
        answers = [page() for _ in range(10)]
        assert time.monotonic() - ended_at < 1.0 + 10 * 0.5  # the requests themselves, generously
        assert answers == [303] * 10  # the first request after it already refused, on either process
    # a deleted user is gone for SCIM and still listed, disabled, for operators
    assert is_error(scim(server, "GET", f"/Users/{user['id']}"), 404)
    gone = scim(server, "GET", "/Users", params={"filter": 'userName eq "deleted@example.com"'}).json()
    assert gone["totalResults"] == 0
    assert admin(server, ADMIN, "GET", f"/users/{user['id']}").json()["data"]["status"] == "disabled"


def test_scim_off_is_a_404_everywhere(tmp_path: Path) -> None:
    with run_server(tmp_path, MODELPORT_ADMIN_TOKEN=ADMIN) as off:
        for path in ("/scim/v2/Users", "/scim/v2/ServiceProviderConfig", "/scim/v2/"):
            answer = httpx.get(
                off.media_url + path, headers={"Authorization": f"Bearer {SCIM_TOKEN}"}, follow_redirects=True
            )
            assert answer.status_code == 404, path


def _failed_start(data_dir: Path, **env: str) -> tuple[int, str]:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "modelport", "serve", "--media-port", "0", "--text-port", "0"],
        env=server_env(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return done.returncode, done.stderr + done.stdout


def test_a_short_or_missing_token_stops_the_start_and_says_why(tmp_path: Path) -> None:
    short = "y" * 31
    code, said = _failed_start(tmp_path, MODELPORT_SCIM__TOKEN_ENV="IDP_SCIM_TOKEN", IDP_SCIM_TOKEN=short)
    assert code != 0 and "has 31 characters; at least 32" in said and short not in said
    code, said = _failed_start(tmp_path, MODELPORT_SCIM__TOKEN_ENV="NOT_SET_ANYWHERE")
    assert code != 0 and "NOT_SET_ANYWHERE, which is not set" in said


def test_the_main_flow_on_postgresql(tmp_path: Path) -> None:
    with server_on("postgres", tmp_path, **ENV) as pg:
        user = new_user(pg, "pg@example.com", externalId="pg-1")
        found = scim(pg, "GET", "/Users", params={"filter": 'userName eq "PG@example.com"'}).json()
        assert [u["id"] for u in found["Resources"]] == [user["id"]]
        group = scim(pg, "POST", "/Groups", json={"displayName": "pg-group", "members": [{"value": user["id"]}]})
        assert group.status_code == 201, group.text
        off = patch(pg, f"/Users/{user['id']}", {"op": "replace", "value": {"active": False}})
        assert off.json()["active"] is False
        assert admin(pg, ADMIN, "GET", f"/users/{user['id']}").json()["data"]["status"] == "disabled"
        assert is_error(scim(pg, "POST", "/Users", json={"userName": "pg@EXAMPLE.com"}), 409, "uniqueness")
        assert scim(pg, "DELETE", f"/Users/{user['id']}").status_code == 204
        assert scim(pg, "GET", f"/Groups/{group.json()['id']}").json()["members"] == []
