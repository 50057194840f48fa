"""The operator service (`operator.verbs`) against a real database: suspension, notes, ledger pages."""

from __future__ import annotations

from decimal import Decimal

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts.auth import Authenticator
from modelport.billing.ledger import ledger_sum
from modelport.errors import InvalidParameters, NotFound
from modelport.operator.verbs import Operator
from modelport.settings import default_tiers


async def test_suspension_refuses_the_teams_keys_and_lifting_it_restores_them(engine: AsyncEngine) -> None:
    auth = Authenticator(engine, ttl=60)
    op = Operator(engine, default_tiers(), auth=auth)
    await op.create_team("north")
    other = await op.create_team("south")
    key = (await op.create_key("north", name="ci")).key
    other_key = (await op.create_key(other.id)).key
    assert (await auth.authenticate(key)) is not None  # cached for 60 s from here

    suspended = await op.suspend("north")
    assert suspended.suspended and suspended.to_public()["suspended"] is True
    assert suspended.to_public()["suspended_at"] is not None
    # The operator empties this process's key cache: refused at once, with the reason.
    resolved = await auth.resolve(key)
    assert resolved.context is None and resolved.suspended
    assert await auth.authenticate(key) is None
    assert (await auth.authenticate(other_key)) is not None  # only that team
    again = await op.suspend("north")
    assert again.suspended_at_ms == suspended.suspended_at_ms  # repeating keeps the first time

    lifted = await op.unsuspend("north")
    assert not lifted.suspended and lifted.to_public()["suspended_at"] is None
    context = await auth.authenticate(key)
    assert context is not None and context.team_name == "north"
    # A revoked key of a suspended team is refused as revoked, not as suspended.
    created = await op.create_key("north")
    await op.revoke_key(created.record.id)
    await op.suspend("north")
    assert not (await auth.resolve(created.key)).suspended


async def test_topup_note_goes_to_the_ledger_and_pages_read_back(engine: AsyncEngine) -> None:
    op = Operator(engine, default_tiers())
    team = await op.create_team("ledgered")
    first = await op.topup("ledgered", Decimal("1.5"))
    assert first.amount_micros == 1_500_000
    await op.topup(team.id, "2", note="  invoice 42  ")
    for i in range(3):
        await op.topup(team.id, Decimal(i + 1), note=f"n{i}")
    entries = await op.ledger("ledgered", limit=2)
    assert [e.note for e in entries] == ["n2", "n1"]
    older = await op.ledger("ledgered", limit=10, before_id=entries[-1].id)
    assert [e.note for e in older] == ["n0", "invoice 42", "top-up"]
    assert all(e.kind == "topup" for e in older)
    assert older[-1].to_public()["amount_usd"] == Decimal("1.5")
    assert sum(e.amount_micros for e in entries + older) == await ledger_sum(engine, team.id)


@pytest.mark.parametrize(
    ("call", "param"),
    [
        (lambda op: op.topup("checked", "1", note="x" * 256), "note"),
        (lambda op: op.topup("checked", "1", note="bad\x00note"), "note"),
        (lambda op: op.create_key("checked", name="k" * 101), "name"),
        (lambda op: op.create_key("checked", name="nul\x00"), "name"),
        (lambda op: op.set_tier("checked", "platinum"), "tier"),
    ],
)
async def test_bad_operator_input_is_a_400_and_writes_nothing(engine: AsyncEngine, call: object, param: str) -> None:
    op = Operator(engine, default_tiers())
    team = await op.create_team("checked")
    with pytest.raises(InvalidParameters) as caught:
        await call(op)  # type: ignore[operator]
    assert caught.value.param == param
    assert await op.ledger(team.id) == [] and list(await op.list_keys(team.id)) == []
    assert (await op.team(team.id)).tier == "free"


async def test_unknown_team_or_key_is_not_found(engine: AsyncEngine) -> None:
    op = Operator(engine, default_tiers())
    for call in (op.suspend("ghost"), op.unsuspend("ghost"), op.ledger("ghost"), op.revoke_key("key_ghost")):
        with pytest.raises(NotFound):
            await call
