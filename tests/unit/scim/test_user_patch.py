"""PatchOps on a User document: what Okta and Entra ID send, RFC 7644's merge of complex values, and the
refusals."""

from __future__ import annotations

from typing import Any

import pytest

from modelport.scim.user_patch import apply
from modelport.scim.wire import ScimError

DOC: dict[str, Any] = {
    "userName": "ada",
    "active": True,
    "name": {"givenName": "Ada", "familyName": "L"},
    "emails": [{"value": "ada@example.org", "type": "work", "primary": True}],
}


def test_entra_id_paths_a_name_part_and_an_email_by_type() -> None:
    done = apply(
        DOC,
        [
            {"op": "Replace", "path": "name.givenName", "value": "Augusta"},
            {"op": "Add", "path": 'emails[type eq "home"].value', "value": "home@example.org"},
            {"op": "Replace", "path": 'emails[type eq "work"].value', "value": "new@example.org"},
        ],
    )
    assert done["name"] == {"givenName": "Augusta", "familyName": "L"}
    assert done["emails"] == [
        {"value": "new@example.org", "type": "work", "primary": True},
        {"type": "home", "value": "home@example.org"},
    ]
    assert DOC["name"]["givenName"] == "Ada"  # the document given is not changed


def test_path_less_values_whose_keys_are_paths() -> None:
    done = apply(DOC, [{"op": "replace", "value": {"active": False, "name.familyName": "Lovelace"}}])
    assert done["active"] is False and done["name"] == {"givenName": "Ada", "familyName": "Lovelace"}


def test_complex_values_merge_and_emails_add_appends_new_entries_only() -> None:
    done = apply(
        DOC,
        [
            {"op": "replace", "path": "name", "value": {"formatted": "Ada L"}},
            {"op": "add", "path": "emails", "value": [{"value": "ADA@example.org"}, {"value": "b@example.org"}]},
        ],
    )
    assert done["name"] == {"givenName": "Ada", "familyName": "L", "formatted": "Ada L"}
    assert [e["value"] for e in done["emails"]] == ["ada@example.org", "b@example.org"]
    removed = apply(
        done, [{"op": "remove", "path": 'emails[value eq "b@example.org"]'}, {"op": "remove", "path": "name"}]
    )
    assert [e["value"] for e in removed["emails"]] == ["ada@example.org"] and "name" not in removed


@pytest.mark.parametrize(
    ("op", "scim_type"),
    [
        ({"op": "remove", "path": "active"}, "mutability"),
        ({"op": "remove", "path": "userName"}, "mutability"),
        ({"op": "replace", "path": "title", "value": "x"}, "invalidPath"),
        ({"op": "replace", "path": "name.nickname", "value": "x"}, "invalidPath"),
        ({"op": "replace", "path": "active.value", "value": True}, "invalidPath"),
        ({"op": "move", "path": "active"}, "invalidSyntax"),
        ({"op": "remove"}, "noTarget"),
        ({"op": "replace", "value": "x"}, "noTarget"),
    ],
)
def test_refusals(op: dict[str, Any], scim_type: str) -> None:
    with pytest.raises(ScimError) as refused:
        apply(DOC, [op])
    assert refused.value.status == 400 and refused.value.scim_type == scim_type
