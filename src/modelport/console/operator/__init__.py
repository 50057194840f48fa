"""The operator console (`/console/admin/`): teams, keys, the catalog, upstreams, every log and task, the queue.

Signed in with MODELPORT_ADMIN_TOKEN (console/signin.py); absent (404) without one. Every change goes
through `operator.verbs.Operator`, the service the admin API and CLI call.
"""

from __future__ import annotations

from fastapi import APIRouter

from modelport.console.operator import activity, audit, catalog, retention, teams, upstreams, users

ROUTERS: tuple[APIRouter, ...] = (
    teams.router,
    catalog.router,
    upstreams.router,
    activity.router,
    retention.router,
    audit.router,
    users.router,
)
