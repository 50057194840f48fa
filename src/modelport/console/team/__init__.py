"""The team console's pages: each module one page (or a page and its exports)."""

from __future__ import annotations

from fastapi import APIRouter

from modelport.console.team import (
    assets,
    audit,
    billing,
    keys,
    logs,
    members,
    notifications,
    overview,
    tasks,
    usage,
    webhooks,
)

ROUTERS: tuple[APIRouter, ...] = (
    overview.router,
    keys.router,
    usage.router,
    logs.router,
    tasks.router,
    assets.router,
    billing.router,
    webhooks.router,
    notifications.router,
    audit.router,
    members.router,
)
