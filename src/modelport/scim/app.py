"""The SCIM app mounted at `/scim/v2` on the media host: bearer-token auth (compared in constant time),
SCIM's error schema for every refusal, and the Users, Groups and discovery routes."""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from modelport.accounts.audit import Actor
from modelport.accounts.scim import groups, users
from modelport.errors import Conflict, InvalidParameters, NotFound, ServiceError
from modelport.scim import discovery, groups_body, user_patch, users_body
from modelport.scim.wire import (
    PATCH,
    ScimError,
    check_if_match,
    error_response,
    list_body,
    not_modified,
    paging,
    parse_eq,
    projection,
    scim_response,
)
from modelport.services import Services
from modelport.web.deps import client_address

PREFIX = "/scim/v2"


def create_scim_app(services: Services, token: str) -> FastAPI:
    app = FastAPI(openapi_url=None, docs_url=None, redoc_url=None)
    app.state.services = services
    expected = token.encode()

    @app.middleware("http")
    async def authenticate(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
        scheme, _, given = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() == "bearer" and hmac.compare_digest(given.strip().encode(), expected):
            return await call_next(request)
        # Compared first, counted after (as the admin token): the right token is never refused by the limit.
        limit = services.settings.scim.failures_per_minute
        decision = await services.limiters.rate.hit(f"scim-token-failures:{client_address(request)}", limit)
        if not decision.allowed:
            detail = f"too many failed SCIM token attempts from this address; try again in {decision.retry_after} s"
            return error_response(ScimError(429, detail), headers={"Retry-After": str(decision.retry_after)})
        return error_response(ScimError(401, "a valid bearer token is required"))

    @app.exception_handler(ScimError)
    async def scim_error(request: Request, exc: ScimError) -> Response:
        return error_response(exc)

    @app.exception_handler(ServiceError)
    async def service_error(request: Request, exc: ServiceError) -> Response:
        scim_type = {Conflict: "uniqueness", InvalidParameters: "invalidValue"}.get(type(exc))
        if isinstance(exc, InvalidParameters):
            scim_type = "invalidValue"
        return error_response(ScimError(exc.status, exc.detail or exc.category, scim_type))

    @app.exception_handler(HTTPException)
    async def http_error(request: Request, exc: HTTPException) -> Response:
        return error_response(ScimError(exc.status_code, str(exc.detail)))

    _routes(app, services)
    return app


def _base(services: Services) -> str:
    return services.settings.effective_public_media_url.rstrip("/") + PREFIX


def _actor(request: Request) -> Actor:
    return Actor("scim", request_id=request.scope.get("state", {}).get("request_id"), client=_client(request))


def _client(request: Request) -> str | None:
    return request.client.host if request.client is not None else None


async def _body(request: Request) -> dict[str, Any]:
    try:
        body = orjson.loads(await request.body())
    except orjson.JSONDecodeError as exc:
        raise ScimError(400, "the body is not JSON", "invalidSyntax") from exc
    if not isinstance(body, dict):
        raise ScimError(400, "the body must be a JSON object", "invalidSyntax")
    return body


def _operations(body: dict[str, Any]) -> list[dict[str, Any]]:
    ops = body.get("Operations")
    if PATCH not in body.get("schemas", []) or not isinstance(ops, list) or not all(isinstance(o, dict) for o in ops):
        raise ScimError(400, f"a PATCH body is a {PATCH} with a list of Operations", "invalidSyntax")
    return ops


def _routes(app: FastAPI, services: Services) -> None:
    engine = services.db

    @app.get("/ServiceProviderConfig")
    async def service_provider_config() -> Response:
        return scim_response(discovery.service_provider_config(_base(services)))

    @app.get("/ResourceTypes")
    async def resource_types() -> Response:
        found = discovery.resource_types(_base(services))
        return scim_response(list_body(len(found), 1, found))

    @app.get("/ResourceTypes/{name}")
    async def resource_type(name: str) -> Response:
        for found in discovery.resource_types(_base(services)):
            if found["id"] == name:
                return scim_response(found)
        raise ScimError(404, f"no resource type {name!r}")

    @app.get("/Schemas")
    async def all_schemas() -> Response:
        found = discovery.schemas(_base(services))
        return scim_response(list_body(len(found), 1, found))

    @app.get("/Schemas/{urn}")
    async def one_schema(urn: str) -> Response:
        for found in discovery.schemas(_base(services)):
            if found["id"] == urn:
                return scim_response(found)
        raise ScimError(404, f"no schema {urn!r}")

    @app.get("/Users")
    async def list_users(request: Request) -> Response:
        start, count = paging(request.query_params.get("startIndex"), request.query_params.get("count"))
        text = request.query_params.get("filter")
        where = None if text is None else users.filter_clause(*parse_eq(text, users.FILTERABLE))
        total, found = await users.query(engine, where, start=start, count=count)
        shown = projection(request)
        return scim_response(list_body(total, start, [shown(users_body.render(u, _base(services))) for u in found]))

    @app.post("/Users")
    async def create_user(request: Request) -> Response:
        made = await users.create(engine, users_body.fields_of(await _body(request)), actor=_actor(request))
        body = users_body.render(made, _base(services))
        return scim_response(body, 201, headers={"Location": body["meta"]["location"], "ETag": body["meta"]["version"]})

    @app.get("/Users/{user_id}")
    async def get_user(request: Request, user_id: str) -> Response:
        return _read(request, users_body.render(await _user(user_id), _base(services)))

    @app.put("/Users/{user_id}")
    async def replace_user(request: Request, user_id: str) -> Response:
        current = await _user(user_id, request)
        changes = users_body.changes_of(users_body.fields_of(await _body(request)), current)
        return _resource(
            users_body.render(await users.change(engine, user_id, changes, actor=_actor(request)), _base(services))
        )

    @app.patch("/Users/{user_id}")
    async def patch_user(request: Request, user_id: str) -> Response:
        current = await _user(user_id, request)
        patched = user_patch.apply(users_body.document(current), _operations(await _body(request)))
        changes = users_body.changes_of(users_body.fields_of(patched), current)
        return _resource(
            users_body.render(await users.change(engine, user_id, changes, actor=_actor(request)), _base(services))
        )

    @app.delete("/Users/{user_id}")
    async def delete_user(request: Request, user_id: str) -> Response:
        await _user(user_id, request)
        await users.delete(engine, user_id, actor=_actor(request))
        return Response(status_code=204)

    @app.get("/Groups")
    async def list_groups(request: Request) -> Response:
        start, count = paging(request.query_params.get("startIndex"), request.query_params.get("count"))
        text = request.query_params.get("filter")
        where = None if text is None else groups.filter_clause(*parse_eq(text, groups.FILTERABLE))
        total, found = await groups.query(engine, where, start=start, count=count)
        shown = projection(request)
        return scim_response(list_body(total, start, [shown(groups_body.render(g, _base(services))) for g in found]))

    @app.post("/Groups")
    async def create_group(request: Request) -> Response:
        body = await _body(request)
        external = body.get("externalId")
        made = await groups.create(
            engine,
            body.get("displayName"),  # type: ignore[arg-type]  # checked by groups.check_display_name
            external_id=external if isinstance(external, str) else None,
            members=groups_body.member_ids(body.get("members")),
            actor=_actor(request),
        )
        rendered = groups_body.render(made, _base(services))
        headers = {"Location": rendered["meta"]["location"], "ETag": rendered["meta"]["version"]}
        return scim_response(rendered, 201, headers=headers)

    @app.get("/Groups/{group_id}")
    async def get_group(request: Request, group_id: str) -> Response:
        return _read(request, groups_body.render(await _group(group_id), _base(services)))

    @app.put("/Groups/{group_id}")
    async def replace_group(request: Request, group_id: str) -> Response:
        await _group(group_id, request)
        body = await _body(request)
        external = body.get("externalId")
        changed = await groups.change(
            engine,
            group_id,
            actor=_actor(request),
            display_name=body.get("displayName"),
            external_id=(external if isinstance(external, str) else None,),
            members=groups_body.member_ids(body.get("members")),
        )
        return _resource(groups_body.render(changed, _base(services)))

    @app.patch("/Groups/{group_id}")
    async def patch_group(request: Request, group_id: str) -> Response:
        await _group(group_id, request)
        changes = groups_body.patch_changes(_operations(await _body(request)))
        changed = await groups.change(engine, group_id, actor=_actor(request), **changes)
        return _resource(groups_body.render(changed, _base(services)))

    @app.delete("/Groups/{group_id}")
    async def delete_group(request: Request, group_id: str) -> Response:
        await _group(group_id, request)
        await groups.delete_group(engine, group_id, actor=_actor(request))
        return Response(status_code=204)

    @app.post("/.search")
    async def search_everything() -> Response:
        raise ScimError(501, "searching every resource type at once is not supported: search /Users or /Groups")

    async def _user(user_id: str, changing: Request | None = None) -> users.ScimUser:
        """The user; for a change (`changing`), its If-Match must name the current version."""
        try:
            found = await users.get(engine, user_id)
        except NotFound as exc:
            raise ScimError(404, f"no user {user_id!r}") from exc
        if changing is not None:
            check_if_match(changing, users_body.render(found, _base(services))["meta"]["version"])
        return found

    async def _group(group_id: str, changing: Request | None = None) -> groups.ScimGroup:
        try:
            found = await groups.get(engine, group_id)
        except NotFound as exc:
            raise ScimError(404, f"no group {group_id!r}") from exc
        if changing is not None:
            check_if_match(changing, groups_body.render(found, _base(services))["meta"]["version"])
        return found


def _read(request: Request, body: dict[str, Any]) -> Response:
    """A GET of one resource: 304 when If-None-Match names its version; `attributes` and
    `excludedAttributes` applied."""
    if not_modified(request, body["meta"]["version"]):
        return Response(status_code=304, headers={"ETag": body["meta"]["version"]})
    shown = projection(request)(body)
    return scim_response(shown, headers={"ETag": body["meta"]["version"], "Location": body["meta"]["location"]})


def _resource(body: dict[str, Any]) -> Response:
    return scim_response(body, headers={"ETag": body["meta"]["version"], "Location": body["meta"]["location"]})
