"""The discovery endpoints' bodies (RFC 7644 section 4): what this server supports."""

from __future__ import annotations

from typing import Any

from modelport.scim.wire import GROUP, MAX_COUNT, USER, with_meta

SPC = "urn:ietf:params:scim:schemas:core:2.0:ServiceProviderConfig"
RESOURCE_TYPE = "urn:ietf:params:scim:schemas:core:2.0:ResourceType"
SCHEMA = "urn:ietf:params:scim:schemas:core:2.0:Schema"
_EPOCH = 1_764_633_600_000  # these documents never change at run time


def service_provider_config(base: str) -> dict[str, Any]:
    body = {
        "schemas": [SPC],
        "documentationUri": "https://github.com/modelport/modelport/blob/main/docs/api/scim.md",
        "patch": {"supported": True},
        "bulk": {"supported": False, "maxOperations": 0, "maxPayloadSize": 0},
        "filter": {"supported": True, "maxResults": MAX_COUNT},
        "changePassword": {"supported": False},
        "sort": {"supported": False},
        "etag": {"supported": True},
        "authenticationSchemes": [
            {
                "type": "oauthbearertoken",
                "name": "Bearer token",
                "description": "The token named by MODELPORT_SCIM__TOKEN_ENV",
                "primary": True,
            }
        ],
    }
    return with_meta(
        body,
        kind="ServiceProviderConfig",
        location=f"{base}/ServiceProviderConfig",
        created_ms=_EPOCH,
        modified_ms=_EPOCH,
    )


def resource_types(base: str) -> list[dict[str, Any]]:
    found = []
    for name, schema, endpoint in (("User", USER, "/Users"), ("Group", GROUP, "/Groups")):
        body = {
            "schemas": [RESOURCE_TYPE],
            "id": name,
            "name": name,
            "endpoint": endpoint,
            "schema": schema,
            "schemaExtensions": [],
        }
        found.append(
            with_meta(
                body,
                kind="ResourceType",
                location=f"{base}/ResourceTypes/{name}",
                created_ms=_EPOCH,
                modified_ms=_EPOCH,
            )
        )
    return found


def _attr(name: str, kind: str = "string", **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "type": kind,
        "multiValued": False,
        "required": False,
        "caseExact": False,
        "mutability": "readWrite",
        "returned": "default",
        "uniqueness": "none",
        **extra,
    }


_USER_ATTRIBUTES = [
    _attr("userName", required=True, uniqueness="server", description="Unique, case-insensitive"),
    _attr(
        "name",
        "complex",
        subAttributes=[_attr("formatted"), _attr("givenName"), _attr("familyName"), _attr("middleName")],
        description="Kept as sent; the account's name is formatted, else given, middle and family names",
    ),
    _attr("displayName"),
    _attr(
        "emails",
        "complex",
        multiValued=True,
        required=True,
        subAttributes=[
            _attr("value", required=True),
            _attr("type", canonicalValues=["work", "home", "other"]),
            _attr("primary", "boolean"),
        ],
        description="Kept as sent; the account's address is the primary value (else the first, else userName)",
    ),
    _attr("active", "boolean"),
    _attr("externalId", caseExact=True),
]
_GROUP_ATTRIBUTES = [
    _attr("displayName", required=True, uniqueness="server"),
    _attr(
        "members",
        "complex",
        multiValued=True,
        subAttributes=[
            _attr("value", caseExact=True, mutability="immutable"),
            _attr("type", mutability="immutable", canonicalValues=["User"]),
            _attr("$ref", "reference", referenceTypes=["User"], mutability="immutable"),
        ],
    ),
    _attr("externalId", caseExact=True),
]


def schemas(base: str) -> list[dict[str, Any]]:
    found = []
    for urn, name, attributes in ((USER, "User", _USER_ATTRIBUTES), (GROUP, "Group", _GROUP_ATTRIBUTES)):
        body = {
            "schemas": [SCHEMA],
            "id": urn,
            "name": name,
            "description": f"{name} account",
            "attributes": attributes,
        }
        found.append(
            with_meta(body, kind="Schema", location=f"{base}/Schemas/{urn}", created_ms=_EPOCH, modified_ms=_EPOCH)
        )
    return found
