"""Webhook secrets at rest (`webhooks/secret_box.py`): sealed per team, opened by the current or the
previous secret key, plain rows from before read as they are."""

from __future__ import annotations

import pytest

from modelport.webhooks.secret_box import SEALED_PREFIX, SecretBox, UnreadableSecret
from modelport.webhooks.secrets import new_secret


def test_a_sealed_secret_opens_for_its_team_only() -> None:
    box = SecretBox("key-one")
    secret = new_secret()
    sealed = box.seal("team_a", secret)
    assert sealed.startswith(SEALED_PREFIX) and secret[6:] not in sealed and len(sealed) <= 100  # the column
    assert box.open("team_a", sealed) == secret and box.is_current("team_a", sealed)
    assert box.seal("team_a", secret) != sealed  # a fresh nonce each time
    with pytest.raises(UnreadableSecret):
        box.open("team_b", sealed)  # a row copied to another team does not open
    tampered = sealed[:-2] + ("A" if sealed[-2] != "A" else "B") + sealed[-1]
    with pytest.raises(UnreadableSecret):
        box.open("team_a", tampered)


def test_the_previous_key_opens_and_plain_rows_pass() -> None:
    secret = new_secret()
    old = SecretBox("key-one").seal("team_a", secret)
    rotated = SecretBox("key-two", "key-one")
    assert rotated.open("team_a", old) == secret and not rotated.is_current("team_a", old)
    with pytest.raises(UnreadableSecret, match="MODELPORT_PREVIOUS_SECRET_KEY"):
        SecretBox("key-two").open("team_a", old)
    assert rotated.open("team_a", secret) == secret and not rotated.is_current("team_a", secret)


def test_a_secret_sealed_before_the_box_moved_down_still_opens() -> None:
    # Sealed by the webhook-only box this one replaced (same key label): existing rows keep opening.
    stored = "mpws1.kgyuxUegOomJegKk1G7v2jRRbiFXTqjMRIU5NeLEXm3ZzJt0bo3UpIR0oo_Ko7q7yeP-n2vbJZl_NGke"
    box = SecretBox("fixed-test-key")
    assert box.open("team_fixed", stored) == "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="
    assert box.is_current("team_fixed", stored)
