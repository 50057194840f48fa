"""`modelport admin key ...`: create (the key shown once), update limits or role, revoke, list."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from modelport.accounts.models import CreatedKey
from modelport.accounts.users import get_user
from modelport.errors import ServiceError
from modelport.operator.verbs import Operator
from modelport.process.cli.common import emit, load, operate


@click.group()
def key() -> None:
    """API keys."""


def _key_limit_options(command: Callable[..., None]) -> Callable[..., None]:
    """The limit options `key create` and `key update` share; `none` clears a limit on update."""
    options = [
        click.option("--name", default=None),
        click.option("--spend-limit", "spend_limit", default=None, metavar="USD", help="spend limit per period"),
        click.option("--period", default=None, type=click.Choice(["day", "week", "month", "total"])),
        click.option("--models", default=None, help="comma-separated model-id patterns, e.g. 'openai/*,local/*'"),
        click.option("--rpm", default=None, help="requests per minute"),
        click.option("--tpm", default=None, help="text tokens per minute"),
        click.option("--expires", default=None, help="2027-01-01, an ISO date-time, or Unix seconds"),
        click.option("--allow-ip", "allow_ip", multiple=True, help="CIDR the key may be used from (repeatable)"),
        click.option("--role", default=None, type=click.Choice(["member", "admin"])),
    ]
    for option in reversed(options):
        command = option(command)
    return command


def _key_fields(options: dict[str, Any]) -> dict[str, Any]:
    from modelport.accounts.key_fields import fields_from_text

    allow_ip = options.pop("allow_ip", ())
    text = {k: (None if v is None else str(v)) for k, v in options.items()}
    text["allow_ip"] = ",".join(allow_ip) if allow_ip else None
    try:
        return fields_from_text(text)
    except ServiceError as exc:
        raise click.ClickException(exc.media_message) from exc


def _key_line(record: Any) -> str:
    limits = {k: v for k, v in record.to_public().items() if k in _LIMIT_NAMES and v is not None}
    shown = "  ".join(f"{k}={v}" for k, v in limits.items())
    return (
        f"{record.id}  {record.prefix}...  {'active' if record.active else 'revoked'}  {record.role}  {shown}".rstrip()
    )


_LIMIT_NAMES = ("name", "spend_limit_usd", "spend_limit_period", "models", "rpm", "tpm", "expires_at", "allowed_ips")


@key.command("create")
@click.argument("team_ref", metavar="TEAM")
@_key_limit_options
@click.option("--owner", default=None, metavar="EMAIL", help="A personal key of this member (default: a team key).")
@click.option("--json", "as_json", is_flag=True)
def key_create(team_ref: str, as_json: bool, owner: str | None, **options: Any) -> None:
    fields = _key_fields(options)

    async def action(op: Operator) -> CreatedKey:
        owner_id = None if owner is None else (await get_user(op.engine, owner)).id
        return await op.create_key(team_ref, fields=fields, owner_user_id=owner_id)

    created = operate(load(), action)
    emit(
        as_json,
        {
            "key": created.key,
            "id": created.record.id,
            "team": created.record.team_id,
            "prefix": created.record.prefix,
            **{k: v for k, v in created.record.to_public().items() if k in (*_LIMIT_NAMES, "role")},
        },
        f"{created.key}\n(key id {created.record.id}; this is the only time the key is shown)",
    )


@key.command("update")
@click.argument("key_id")
@_key_limit_options
@click.option("--json", "as_json", is_flag=True)
def key_update(key_id: str, as_json: bool, **options: Any) -> None:
    """Change KEY_ID's name, limits or role (`--rpm none` clears a limit)."""
    fields = _key_fields(options)
    record = operate(load(), lambda op: op.update_key(key_id, fields))
    emit(as_json, record.to_public(), _key_line(record))


@key.command("revoke")
@click.argument("key_id")
@click.option("--json", "as_json", is_flag=True)
def key_revoke(key_id: str, as_json: bool) -> None:
    record = operate(load(), lambda op: op.revoke_key(key_id))
    emit(as_json, record.to_public(), f"revoked {record.id}")


@key.command("list")
@click.argument("team_ref", metavar="TEAM")
@click.option("--json", "as_json", is_flag=True)
def key_list(team_ref: str, as_json: bool) -> None:
    keys = operate(load(), lambda op: op.list_keys(team_ref))
    emit(
        as_json,
        {"keys": [k.to_public() for k in keys]},
        "\n".join(_key_line(k) for k in keys) or "(no keys)",
    )
