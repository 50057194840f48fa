"""A SCIM User's JSON, both ways. The account has one email and one name; SCIM's userName, name (its
parts), displayName and emails are kept as sent (`users.scim_attributes`) and read back as written. The
account's email is the primary `emails` value (else the first), or the userName when no entry is an
address; its name is `name.formatted`, else the name's parts, else displayName."""

from __future__ import annotations

from typing import Any

from modelport.accounts.scim.users import ScimUser, UserFields
from modelport.accounts.users import check_email, check_name
from modelport.errors import InvalidParameters
from modelport.scim.wire import USER, ScimError, with_meta

NAME_PARTS = ("formatted", "familyName", "givenName", "middleName", "honorificPrefix", "honorificSuffix")
EMAIL_PARTS = ("value", "type", "primary", "display")


def document(user: ScimUser) -> dict[str, Any]:
    """The user's SCIM attributes (no schemas, id or meta). What SCIM sent, unless an operator has changed
    the account's email or name since: then those read from the account."""
    stored = user.attributes or {}
    doc: dict[str, Any] = {"userName": user.email, "active": user.active}
    # no emails sent (the userName is the address): the account's address is the one entry
    doc["emails"] = [{"value": user.email, "type": "work", "primary": True}]
    if stored.get("_email") == user.email:
        doc["userName"] = stored.get("userName") or user.email
        if stored.get("emails"):
            doc["emails"] = stored["emails"]
    if stored and stored.get("_name") == user.name:
        for key in ("name", "displayName"):
            if stored.get(key) is not None:
                doc[key] = stored[key]
    elif user.name is not None:
        doc["name"] = {"formatted": user.name}
        doc["displayName"] = user.name
    if user.external_id is not None:
        doc["externalId"] = user.external_id
    return doc


def render(user: ScimUser, base: str) -> dict[str, Any]:
    body = {"schemas": [USER], "id": user.id, **document(user)}
    if isinstance(body.get("name"), dict) and "formatted" not in body["name"]:
        formatted = _joined(body["name"])
        body["name"] = {**body["name"], **({"formatted": formatted} if formatted else {})}
    location = f"{base}/Users/{user.id}"
    return with_meta(
        body, kind="User", location=location, created_ms=user.created_at_ms, modified_ms=user.modified_at_ms
    )


def _joined(name: dict[str, Any]) -> str | None:
    parts = [name.get(k) for k in ("givenName", "middleName", "familyName")]
    return " ".join(p for p in parts if isinstance(p, str) and p) or None


def name_of(value: object) -> dict[str, str] | None:
    """SCIM's `name` complex attribute, checked: its known string parts."""
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ScimError(400, "name must be an object", "invalidValue")
    found: dict[str, str] = {}
    for key, part in value.items():
        known = next((k for k in NAME_PARTS if k.lower() == str(key).lower()), None)
        if known is None or part is None:
            continue
        if not isinstance(part, str):
            raise ScimError(400, f"name.{known} must be a string", "invalidValue")
        found[known] = part
    return found or None


def emails_of(value: object) -> list[dict[str, Any]]:
    if value is None:
        return []
    entries = value if isinstance(value, list) else [value]
    found = []
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), str):
            raise ScimError(400, "emails are objects with a string value", "invalidValue")
        kept = {k: entry[k] for k in EMAIL_PARTS if entry.get(k) is not None}
        if "primary" in kept:
            kept["primary"] = boolean(kept["primary"], "emails.primary")
        found.append(kept)
    return found


def boolean(value: object, attribute: str) -> bool:
    """SCIM booleans; Entra ID sends "True"/"False" strings in PATCH."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise ScimError(400, f"{attribute} must be a boolean", "invalidValue")


def _email(user_name: str, emails: list[dict[str, Any]]) -> str:
    """The account's address: the primary (else first) email that is one, else the userName."""
    ordered = sorted(emails, key=lambda e: not e.get("primary"))
    for candidate in [*(e["value"] for e in ordered), user_name]:
        try:
            return check_email(candidate)
        except InvalidParameters:
            continue
    raise ScimError(400, "the userName or an emails value must be an email address", "invalidValue")


def fields_of(body: dict[str, Any]) -> UserFields:
    """A POST's or PUT's body, or a patched document (a PUT replaces every attribute: an absent one is
    cleared, or its default)."""
    user_name = body.get("userName")
    if not isinstance(user_name, str) or not user_name.strip():
        raise ScimError(400, "userName is required", "invalidValue")
    external = body.get("externalId")
    if external is not None and not isinstance(external, str):
        raise ScimError(400, "externalId must be a string", "invalidValue")
    display = body.get("displayName")
    if display is not None and not isinstance(display, str):
        raise ScimError(400, "displayName must be a string", "invalidValue")
    name = name_of(body.get("name"))
    emails = emails_of(body.get("emails"))
    email = _email(user_name, emails)
    account_name = check_name((name or {}).get("formatted") or _joined(name or {}) or display)
    attributes = {
        "userName": user_name,
        "name": name,
        "displayName": display,
        "emails": emails,
        "_email": email,  # what the account held when SCIM wrote these (an operator's change shows)
        "_name": account_name,
    }
    return UserFields(
        email=email,
        name=account_name,
        active=boolean(body.get("active", True), "active"),
        external_id=external,
        user_name=user_name,
        attributes=attributes,
    )


def changes_of(fields: UserFields, current: ScimUser) -> dict[str, Any]:
    """`accounts.scim.users.change`'s changes: the SCIM attributes always, the account's fields that differ."""
    changes: dict[str, Any] = {"attributes": fields.attributes, "user_name": fields.user_name}
    if fields.email != current.email:
        changes["email"] = fields.email
    if fields.name != current.name:
        changes["name"] = fields.name
    if fields.active != current.active:
        changes["active"] = fields.active
    if fields.external_id != current.external_id:
        changes["external_id"] = fields.external_id
    return changes
