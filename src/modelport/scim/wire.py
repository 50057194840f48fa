"""SCIM's wire words: schema URNs, the media type, the error body, `eq` filters and paging."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import orjson
from starlette.requests import Request
from starlette.responses import Response

MEDIA_TYPE = "application/scim+json"
USER = "urn:ietf:params:scim:schemas:core:2.0:User"
GROUP = "urn:ietf:params:scim:schemas:core:2.0:Group"
LIST = "urn:ietf:params:scim:api:messages:2.0:ListResponse"
PATCH = "urn:ietf:params:scim:api:messages:2.0:PatchOp"
ERROR = "urn:ietf:params:scim:api:messages:2.0:Error"
MAX_COUNT = 200  # the most resources one page returns (ServiceProviderConfig filter.maxResults)

# attribute eq "string" | true | false | null (RFC 7644 3.4.2.2, the one operator we support)
_EQ = re.compile(r'^\s*([A-Za-z][A-Za-z0-9_.:$-]*)\s+eq\s+("(?:[^"\\]|\\.)*"|true|false|null)\s*$', re.IGNORECASE)


class ScimError(Exception):
    def __init__(self, status: int, detail: str, scim_type: str | None = None) -> None:
        super().__init__(detail)
        self.status, self.detail, self.scim_type = status, detail, scim_type


def scim_response(body: dict[str, Any], status: int = 200, *, headers: dict[str, str] | None = None) -> Response:
    return Response(orjson.dumps(body), status_code=status, media_type=MEDIA_TYPE, headers=headers)


def error_response(error: ScimError, *, headers: dict[str, str] | None = None) -> Response:
    body: dict[str, Any] = {"schemas": [ERROR], "status": str(error.status), "detail": error.detail}
    if error.scim_type is not None:
        body["scimType"] = error.scim_type
    if error.status == 401:
        headers = {**(headers or {}), "WWW-Authenticate": 'Bearer realm="scim"'}
    return scim_response(body, error.status, headers=headers)


def _etags(header: str) -> list[str]:
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def check_if_match(request: Request, version: str) -> None:
    """RFC 7644 3.14: a change whose If-Match names another version (someone changed it since) is a 412.
    Weak comparison (our versions are weak ETags; RFC 7232 allows it for If-Match here: the body is ours)."""
    header = request.headers.get("if-match")
    if header is None:
        return
    tags = _etags(header)
    if "*" in tags or any(_weak(t) == _weak(version) for t in tags):
        return
    raise ScimError(412, "the resource changed since that version (If-Match): read it again")


def not_modified(request: Request, version: str) -> bool:
    header = request.headers.get("if-none-match")
    return header is not None and any(t == "*" or _weak(t) == _weak(version) for t in _etags(header))


def _weak(tag: str) -> str:
    return tag.removeprefix("W/")


def projection(request: Request) -> Callable[[dict[str, Any]], dict[str, Any]]:
    """RFC 7644 3.4.2.5: `attributes` keeps only the named (top-level or `attr.sub`) attributes,
    `excludedAttributes` drops them; `schemas`, `id` and `meta` are always returned."""
    wanted = _names(request.query_params.get("attributes"))
    dropped = _names(request.query_params.get("excludedAttributes"))

    def shown(body: dict[str, Any]) -> dict[str, Any]:
        if wanted:
            kept = {}
            for key, value in body.items():
                if key in _ALWAYS or key.lower() in wanted:
                    kept[key] = value
                elif isinstance(value, dict) and (subs := wanted.get(key.lower() + ".*")):
                    kept[key] = {k: v for k, v in value.items() if k.lower() in subs}
            return kept
        if dropped:
            return {k: v for k, v in body.items() if k in _ALWAYS or k.lower() not in dropped}
        return body

    return shown


_ALWAYS = ("schemas", "id", "meta")


def _names(text: str | None) -> dict[str, set[str]]:
    """Lower-cased attribute names (core schema URN prefixes removed); `name.givenName` also adds
    `name.*` -> {"givenname"}."""
    found: dict[str, set[str]] = {}
    for raw in (text or "").split(","):
        name = raw.strip().lower()
        for urn in (USER.lower() + ":", GROUP.lower() + ":"):
            name = name.removeprefix(urn)
        if not name:
            continue
        top, _, sub = name.partition(".")
        if sub:
            found.setdefault(top + ".*", set()).add(sub)
        else:
            found[top] = set()
    return found


# Entra ID's `emails[type eq "work"].value eq "..."`: read as `emails.value eq "..."` (the account's one address)
_TYPED_EMAIL = re.compile(r'^\s*emails\[\s*type\s+eq\s+"[A-Za-z]*"\s*\]\.value(?=\s)', re.IGNORECASE)


def parse_eq(text: str, allowed: tuple[str, ...]) -> tuple[str, object]:
    """(lower-cased attribute, value) of `attr eq value`; any other filter is SCIM's `invalidFilter`."""
    if "emails.value" in allowed:
        text = _TYPED_EMAIL.sub("emails.value", text)
    found = _EQ.match(text)
    if found is None:
        raise ScimError(400, "only filters of the form 'attribute eq \"value\"' are supported", "invalidFilter")
    attribute = found.group(1).lower().removeprefix(USER.lower() + ":").removeprefix(GROUP.lower() + ":")
    if attribute not in allowed:
        raise ScimError(400, f"filtering on {found.group(1)} is not supported", "invalidFilter")
    raw = found.group(2)
    value: object = orjson.loads(raw) if raw.startswith('"') else {"true": True, "false": False}.get(raw.lower())
    return attribute, value


def paging(start_index: str | None, count: str | None) -> tuple[int, int]:
    """(startIndex, count): RFC 7644 3.4.2.4 says values below 1 (0 for count) are taken as 1 (0)."""
    try:
        start = max(1, int(start_index)) if start_index else 1
        many = min(MAX_COUNT, max(0, int(count))) if count else MAX_COUNT
    except ValueError as exc:
        raise ScimError(400, "startIndex and count must be integers", "invalidValue") from exc
    return start, many


def list_body(total: int, start: int, resources: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "schemas": [LIST],
        "totalResults": total,
        "startIndex": start,
        "itemsPerPage": len(resources),
        "Resources": resources,
    }


def iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).isoformat().replace("+00:00", "Z")


def with_meta(body: dict[str, Any], *, kind: str, location: str, created_ms: int, modified_ms: int) -> dict[str, Any]:
    """The resource with its `meta`; `version` is a weak ETag of everything else, so any change shows."""
    version = 'W/"' + hashlib.sha256(orjson.dumps(body, option=orjson.OPT_SORT_KEYS)).hexdigest()[:20] + '"'
    meta = {
        "resourceType": kind,
        "created": iso(created_ms),
        "lastModified": iso(max(created_ms, modified_ms)),
        "location": location,
        "version": version,
    }
    return {**body, "meta": meta}
