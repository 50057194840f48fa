"""A PatchOp applied to a User document (RFC 7644 3.5.2): paths `attr`, `attr.sub`, `emails[filter]` and
`emails[filter].sub`, and path-less operations whose value names attributes (Okta; Entra ID puts paths
such as `name.givenName` in those keys). The patched document is then read as a PUT body is."""

from __future__ import annotations

import copy
import re
from typing import Any

from modelport.scim.users_body import EMAIL_PARTS, NAME_PARTS
from modelport.scim.wire import USER, ScimError, parse_eq

ATTRIBUTES = {a.lower(): a for a in ("userName", "name", "displayName", "emails", "active", "externalId")}
_PATH = re.compile(r"^([A-Za-z][A-Za-z0-9_-]*)(?:\[(.+)\])?(?:\.([A-Za-z][A-Za-z0-9_-]*))?$")


def apply(document: dict[str, Any], operations: list[dict[str, Any]]) -> dict[str, Any]:
    doc = copy.deepcopy(document)
    for op in operations:
        kind = str(op.get("op", "")).lower()
        if kind not in ("add", "replace", "remove"):
            raise ScimError(400, f"unknown PATCH op {op.get('op')!r}", "invalidSyntax")
        path, value = op.get("path"), op.get("value")
        if path is None:
            if kind == "remove" or not isinstance(value, dict):
                raise ScimError(400, "a PATCH without a path needs an object value", "noTarget")
            for key, item in value.items():
                _at(doc, kind, str(key), item)
        else:
            _at(doc, kind, str(path), None if kind == "remove" else value)
    return doc


def _at(doc: dict[str, Any], kind: str, path: str, value: Any) -> None:
    text = path[len(USER) + 1 :] if path.lower().startswith(USER.lower() + ":") else path
    found = _PATH.match(text.strip())
    attribute = ATTRIBUTES.get(found.group(1).lower()) if found else None
    if found is None or attribute is None:
        raise ScimError(400, f"attribute {path!r} cannot be changed here", "invalidPath")
    selector, sub = found.group(2), found.group(3)
    if attribute == "emails":
        _emails(doc, kind, selector, sub, value)
    elif selector is not None:
        raise ScimError(400, f"{attribute} is not multi-valued", "invalidPath")
    elif attribute == "name":
        _name(doc, kind, sub, value)
    elif sub is not None:
        raise ScimError(400, f"{attribute} has no sub-attributes", "invalidPath")
    elif kind == "remove":
        if attribute in ("userName", "active"):
            raise ScimError(400, f"{attribute} cannot be removed (set active to false to disable)", "mutability")
        doc.pop(attribute, None)
    else:
        doc[attribute] = value


def _name(doc: dict[str, Any], kind: str, sub: str | None, value: Any) -> None:
    current = dict(doc.get("name") or {})
    if sub is None:
        if kind == "remove":
            doc.pop("name", None)
            return
        if value is not None and not isinstance(value, dict):
            raise ScimError(400, "name must be an object", "invalidValue")
        current.update(value or {})  # add and replace both merge a complex value's sub-attributes
    else:
        known = next((k for k in NAME_PARTS if k.lower() == sub.lower()), None)
        if known is None:
            raise ScimError(400, f"name has no sub-attribute {sub!r}", "invalidPath")
        if kind == "remove" or value is None:
            current.pop(known, None)
        else:
            current[known] = value
    doc["name"] = current or None


def _emails(doc: dict[str, Any], kind: str, selector: str | None, sub: str | None, value: Any) -> None:
    emails: list[dict[str, Any]] = [dict(e) for e in doc.get("emails") or []]
    if sub is not None and sub not in EMAIL_PARTS:
        sub = next((k for k in EMAIL_PARTS if k.lower() == sub.lower()), None)
        if sub is None:
            raise ScimError(400, "emails has the sub-attributes value, type, primary and display", "invalidPath")
    if selector is None and sub is None:
        entries = value if isinstance(value, list) else ([] if value is None else [value])
        if kind == "remove":
            emails = []
        elif kind == "replace":
            emails = list(entries)
        else:
            emails += [e for e in entries if not any(_same(e, had) for had in emails)]
    else:
        if selector is None:  # `emails.value`: the primary entry, else the first
            chosen = [next((e for e in emails if e.get("primary")), emails[0])] if emails else []
        else:
            attribute, wanted = parse_eq(selector, ("value", "type", "primary", "display"))
            chosen = [e for e in emails if _matches(e.get(attribute), wanted)]
        if kind == "remove" and sub is None:
            emails = [e for e in emails if not any(e is c for c in chosen)]
        elif not chosen and kind != "remove":
            made: dict[str, Any] = {}
            if selector is not None:
                made[attribute] = wanted
            if sub is None and isinstance(value, dict):
                made.update(value)
            elif sub is not None:
                made[sub] = value
            emails.append(made)
        for entry in chosen:
            if kind == "remove":
                entry.pop(str(sub), None)
            elif sub is None:
                entry.update(value if isinstance(value, dict) else {})
            else:
                entry[sub] = value
    doc["emails"] = emails


def _same(a: object, b: dict[str, Any]) -> bool:
    return isinstance(a, dict) and str(a.get("value", "")).lower() == str(b.get("value", "")).lower()


def _matches(have: object, wanted: object) -> bool:
    if isinstance(have, str) and isinstance(wanted, str):
        return have.lower() == wanted.lower()
    return have == wanted
