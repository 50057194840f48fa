"""The operator console (`/console/admin/`): teams and their people, keys, the catalog, upstreams, every log
and task, the queue, users.

Signed in with MODELPORT_ADMIN_TOKEN (console/signin.py) or as an operator account (the team sign-in page;
an `operator_viewer` only reads: `console.deps.require_operator`); absent (404) without either. Every change
goes through `operator.verbs.Operator` or `operator.people.People`, the services the admin API and CLI call.
"""

from __future__ import annotations

from fastapi import APIRouter

from modelport.console.operator import (
    activity,
    audit,
    catalog,
    keys,
    retention,
    team_people,
    teams,
    upstreams,
    users,
)

ROUTERS: tuple[APIRouter, ...] = (
    teams.router,
    keys.router,
    team_people.router,
    catalog.router,
    upstreams.router,
    activity.router,
    retention.router,
    audit.router,
    users.router,
)
