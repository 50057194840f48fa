"""A SCIM Group's JSON, both ways: members are users, by id (no `display`: IdPs do not read it back, and
scim2-tester compares members as sent)."""

from __future__ import annotations

from typing import Any

from modelport.accounts.scim.groups import ScimGroup
from modelport.scim.wire import GROUP, ScimError, parse_eq, with_meta


def render(group: ScimGroup, base: str) -> dict[str, Any]:
    body: dict[str, Any] = {
        "schemas": [GROUP],
        "id": group.id,
        "displayName": group.display_name,
        "members": [
            {"value": user_id, "type": "User", "$ref": f"{base}/Users/{user_id}"} for user_id, _ in group.members
        ],
    }
    if group.external_id is not None:
        body["externalId"] = group.external_id
    return with_meta(
        body,
        kind="Group",
        location=f"{base}/Groups/{group.id}",
        created_ms=group.created_at_ms,
        modified_ms=group.modified_at_ms,
    )


def member_ids(value: object) -> set[str]:
    if value is None:
        return set()
    entries = value if isinstance(value, list) else [value]
    found = set()
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("value"), str):
            raise ScimError(400, "members are objects with a user id as value", "invalidValue")
        found.add(str(entry["value"]))
    return found


def patch_changes(operations: list[dict[str, Any]]) -> dict[str, Any]:
    """`accounts.scim.groups.change`'s keyword arguments for a PatchOp's operations."""
    add: set[str] = set()
    remove: set[str] = set()
    result: dict[str, Any] = {}
    for op in operations:
        kind = str(op.get("op", "")).lower()
        path, value = op.get("path"), op.get("value")
        if kind not in ("add", "replace", "remove"):
            raise ScimError(400, f"unknown PATCH op {op.get('op')!r}", "invalidSyntax")
        if path is None:
            if not isinstance(value, dict) or kind == "remove":
                raise ScimError(400, "a PATCH without a path needs an object value", "noTarget")
            items = list(value.items())
        else:
            items = [(str(path), value)]
        for attribute, item in items:
            key = attribute.lower().removeprefix(GROUP.lower() + ":")
            if key == "members":
                ids = member_ids(item)
                if kind == "replace":
                    result["members"], add, remove = ids, set(), set()
                elif kind == "add":
                    add |= ids
                    remove -= ids
                else:  # remove: the given members (Entra ID), or all of them without a value
                    if item is None:
                        result["members"], add, remove = set(), set(), set()
                    remove |= ids
                    add -= ids
            elif key.startswith("members[") and kind == "remove":
                inner = attribute[attribute.index("[") + 1 : attribute.rindex("]")]
                _, user_id = parse_eq(inner, ("value",))
                remove.add(str(user_id))
                add.discard(str(user_id))
            elif key == "displayname" and kind != "remove":
                result["display_name"] = item
            elif key == "externalid":
                result["external_id"] = (None if kind == "remove" else item,)
            elif key == "id":
                continue  # Okta sends the id back in a no-path replace: unchanged
            else:
                raise ScimError(400, f"attribute {attribute!r} cannot be changed here", "invalidPath")
    return {**result, "add": add, "remove": remove}
