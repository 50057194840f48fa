"""The team console's pages: each module one page (or a page and its exports)."""

from __future__ import annotations

from fastapi import APIRouter

from modelport.console.team import overview

ROUTERS: tuple[APIRouter, ...] = (overview.router,)
