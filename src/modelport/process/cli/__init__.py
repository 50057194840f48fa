"""The `modelport` command, one module per noun: serving (`serve`, `worker`, `migrate`), the admin verbs on
teams, keys and money (`teams`, `keys`, `money`, through `operator.verbs`), and data (`logs export`, `prune`,
`backup`); every admin verb answers in text or with `--json`. The banner `serve` prints is `banner.py`."""

from __future__ import annotations

import gc

import click

from modelport.process.cli.data import backup, logs, prune
from modelport.process.cli.keys import key
from modelport.process.cli.money import ledger_show, tier, topup
from modelport.process.cli.people import invite, member, user
from modelport.process.cli.serving import migrate, serve, worker
from modelport.process.cli.teams import team


@click.group()
def main() -> None:
    """modelport: one key, one balance and one log for every text and media model."""
    gc.enable()  # `python -m modelport` imported this module with it off (__main__.py)


@click.group()
def admin() -> None:
    """Teams, keys, people, balances and tiers."""


for command in (serve, worker, migrate, admin):
    main.add_command(command)
for command in (team, key, topup, ledger_show, tier, logs, prune, backup, user, member, invite):
    admin.add_command(command)
