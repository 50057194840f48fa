"""`modelport admin topup`, `admin ledger` and `admin tier set`: a team's money and tier."""

from __future__ import annotations

from decimal import Decimal

import click

from modelport.errors import InvalidParameters
from modelport.operator.verbs import check_tier
from modelport.process.cli.common import emit, load, operate


@click.command("topup")
@click.argument("team_ref", metavar="TEAM")
@click.argument("amount_usd")
@click.option("--note", default=None, help="Written into the ledger entry (default: top-up).")
@click.option("--json", "as_json", is_flag=True)
def topup(team_ref: str, amount_usd: str, note: str | None, as_json: bool) -> None:
    try:
        amount = Decimal(amount_usd)
    except ArithmeticError as exc:
        raise click.BadParameter(f"not a decimal amount: {amount_usd}") from exc
    result = operate(load(), lambda op: op.topup(team_ref, amount, note=note))
    emit(
        as_json,
        {"team": result.team.to_public(), "tier_changed": result.tier_changed},
        f"{result.team.name}: balance {result.team.available_usd} USD, tier {result.team.tier}",
    )


@click.command("ledger")
@click.argument("team_ref", metavar="TEAM")
@click.option("--limit", type=click.IntRange(1, 1000), default=20, show_default=True)
@click.option("--before-id", type=int, default=None, help="Only entries older than this id (paging back).")
@click.option("--json", "as_json", is_flag=True)
def ledger_show(team_ref: str, limit: int, before_id: int | None, as_json: bool) -> None:
    """TEAM's ledger entries, newest first."""
    entries = operate(load(), lambda op: op.ledger(team_ref, limit=limit, before_id=before_id))
    rows = [e.to_public() for e in entries]
    emit(
        as_json,
        {"entries": rows},
        "\n".join(f"{r['id']}  {r['kind']:<12} {r['amount_usd']:>14} USD  {r['note'] or r['ref'] or ''}" for r in rows)
        or "(no entries)",
    )


@click.group()
def tier() -> None:
    """Tiers."""


@tier.command("set")
@click.argument("team_ref", metavar="TEAM")
@click.argument("tier_name", metavar="TIER")
@click.option("--json", "as_json", is_flag=True)
def tier_set(team_ref: str, tier_name: str, as_json: bool) -> None:
    settings = load()
    try:
        check_tier(settings.tiers, tier_name)
    except InvalidParameters as exc:
        raise click.BadParameter(exc.detail) from exc
    updated = operate(settings, lambda op: op.set_tier(team_ref, tier_name))
    emit(as_json, updated.to_public(), f"{updated.name} is now on tier {updated.tier}")
