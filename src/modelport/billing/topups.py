"""Top-ups, and the tier a single top-up unlocks (spec, Limits)."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import audit
from modelport.accounts.audit import Actor
from modelport.accounts.models import Team
from modelport.accounts.service import get_team, raise_tier_in
from modelport.billing import ledger
from modelport.errors import InvalidParameters
from modelport.money import MAX_TOPUP_USD, MICROS_PER_USD, display_usd, usd_to_micros
from modelport.settings import TierSettings


@dataclass(frozen=True, slots=True)
class TopupResult:
    team: Team
    amount_micros: int
    tier_changed: bool


def tier_rank(tiers: list[TierSettings], name: str) -> int:
    for rank, tier in enumerate(tiers):
        if tier.name == name:
            return rank
    return 0


def qualifying_tier(tiers: list[TierSettings], amount_micros: int) -> TierSettings:
    """The highest tier whose qualifying amount this single top-up reaches (tiers sorted ascending)."""
    best = tiers[0]
    for tier in tiers:
        if amount_micros >= usd_to_micros(tier.qualifying_topup_usd):
            best = tier
    return best


MAX_NOTE = 255  # ledger_entries.note


async def topup_team(
    engine: AsyncEngine,
    tiers: list[TierSettings],
    team_ref: str,
    amount_usd: Decimal | str,
    *,
    note: str | None = None,
    actor: Actor | None = None,
) -> TopupResult:
    """`note` goes into the ledger entry (`top-up` when none is given)."""
    note = (note or "").strip() or "top-up"
    if len(note) > MAX_NOTE:
        raise InvalidParameters(f"a note is at most {MAX_NOTE} characters", param="note")
    try:
        micros = usd_to_micros(amount_usd)
    except ValueError as exc:
        raise InvalidParameters(str(exc), param="amount_usd") from exc
    if micros > MAX_TOPUP_USD * MICROS_PER_USD:  # checked before any lookup: never near 64 bits
        raise InvalidParameters(f"a top-up is at most {MAX_TOPUP_USD} USD", param="amount_usd")
    team = await get_team(engine, team_ref)
    target = qualifying_tier(tiers, micros)
    changed = False
    async with engine.begin() as conn:
        after = await ledger.topup_in(conn, team.id, micros, note=note)
        if tier_rank(tiers, target.name) > tier_rank(tiers, team.tier):
            # Only ever moves up; the WHERE keeps a concurrent larger top-up's tier.
            lower = [t.name for t in tiers[: tier_rank(tiers, target.name)]]
            changed = await raise_tier_in(conn, team.id, target.name, lower=lower)
        await audit.record(
            conn,
            actor,
            "team.topup",
            team_id=team.id,
            target=team.id,
            before={"balance_usd": display_usd(after.balance_micros - micros), "tier": team.tier},
            after={
                "balance_usd": display_usd(after.balance_micros),
                "tier": target.name if changed else team.tier,
                "amount_usd": display_usd(micros),
                "note": note,
            },
        )
    return TopupResult(team=await get_team(engine, team.id), amount_micros=micros, tier_changed=changed)
