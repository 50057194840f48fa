"""`modelport admin team ...`: create, show, list, set flags and log window, suspend, end console sessions."""

from __future__ import annotations

import click

from modelport.accounts.models import Team
from modelport.operator.verbs import Operator
from modelport.process.cli.common import emit, load, operate


@click.group()
def team() -> None:
    """Teams."""


@team.command("create")
@click.argument("name")
@click.option("--json", "as_json", is_flag=True)
def team_create(name: str, as_json: bool) -> None:
    created = operate(load(), lambda op: op.create_team(name))
    emit(as_json, created.to_public(), f"created team {created.name} ({created.id})")


@team.command("show")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_show(team_ref: str, as_json: bool) -> None:
    found = operate(load(), lambda op: op.team(team_ref))
    pub = found.to_public()
    emit(as_json, pub, "\n".join(f"{k}: {v}" for k, v in pub.items()))


@team.command("list")
@click.option("--json", "as_json", is_flag=True)
def team_list(as_json: bool) -> None:
    teams = operate(load(), lambda op: op.list_teams())
    emit(
        as_json,
        {"teams": [t.to_public() for t in teams]},
        "\n".join(
            f"{t.id}  {t.name}  {t.available_usd} USD  {t.tier}" + ("  suspended" if t.suspended else "") for t in teams
        )
        or "(no teams)",
    )


def _on_off(value: str | None) -> bool | None:
    return None if value is None else value == "on"


@team.command("set")
@click.argument("team_ref", metavar="TEAM")
@click.option("--asset-service", type=click.Choice(["on", "off"]), default=None)
@click.option("--log-retention", type=click.Choice(["on", "off"]), default=None)
@click.option(
    "--log-days",
    default=None,
    metavar="N",
    help="The team's request-log window in days (fractions allowed; 0: forever; 'default': the deployment's).",
)
@click.option(
    "--cache",
    type=click.Choice(["off", "team", "key"]),
    default=None,
    help="The response cache: off, shared by the team's keys, or per key (off purges its entries).",
)
@click.option(
    "--cache-tool-calls", type=click.Choice(["on", "off"]), default=None, help="Store answers with tool calls."
)
@click.option("--json", "as_json", is_flag=True)
def team_set(
    team_ref: str,
    asset_service: str | None,
    log_retention: str | None,
    log_days: str | None,
    cache: str | None,
    cache_tool_calls: str | None,
    as_json: bool,
) -> None:
    async def action(op: Operator) -> Team:
        updated = await op.set_flags(
            team_ref, asset_service=_on_off(asset_service), log_retention=_on_off(log_retention)
        )
        if cache is not None or cache_tool_calls is not None:
            updated = await op.set_cache(team_ref, cache=cache, tool_calls=_on_off(cache_tool_calls))
        return updated if log_days is None else await op.set_log_days(team_ref, log_days)

    updated = operate(load(), action)
    emit(as_json, updated.to_public(), f"updated team {updated.name}")


@team.command("purge-cache")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_purge_cache(team_ref: str, as_json: bool) -> None:
    """Remove every answer TEAM's response cache holds."""
    found, gone = operate(load(), lambda op: op.purge_cache(team_ref))
    emit(as_json, {"team": found.to_public(), "entries_purged": gone}, f"purged {gone} cached answers of {found.name}")


@team.command("suspend")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_suspend(team_ref: str, as_json: bool) -> None:
    """Refuse every key of TEAM on both hosts (401) until `unsuspend`."""
    updated = operate(load(), lambda op: op.suspend(team_ref))
    emit(as_json, updated.to_public(), f"suspended team {updated.name}: its keys are refused")


@team.command("unsuspend")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_unsuspend(team_ref: str, as_json: bool) -> None:
    """Lift TEAM's suspension: its active keys work again."""
    updated = operate(load(), lambda op: op.unsuspend(team_ref))
    emit(as_json, updated.to_public(), f"team {updated.name} is no longer suspended")


@team.command("end-sessions")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def team_end_sessions(team_ref: str, as_json: bool) -> None:
    """End every console session of TEAM at once (its members sign in again)."""
    found, ended = operate(load(), lambda op: op.end_sessions(team_ref))
    emit(
        as_json, {"team": found.to_public(), "sessions_ended": ended}, f"ended {ended} console sessions of {found.name}"
    )
