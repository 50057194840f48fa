"""Usage: spend, requests and tokens by day, by model and by key, from the daily rollups; CSV export."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from fastapi import APIRouter, Depends
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from modelport.accounts import audit
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission, allows
from modelport.accounts.service import get_team, list_keys
from modelport.clock import now_ms
from modelport.console.charts import daily
from modelport.console.deps import console_actor, require_team, team_with
from modelport.console.forms import choice, csv_response
from modelport.console.templating import console_root, day, render, usd_plain
from modelport.operator.verbs import Operator
from modelport.requestlog.store import DAY_MS
from modelport.requestlog.usage import UsageRow, daily_usage
from modelport.response_cache import RESPONSE_CACHE
from modelport.web.actor import request_actor
from modelport.web.deps import get_services

router = APIRouter()

PERIODS = ("7", "30", "90")
NO_KEY = "(before keys were logged)"


@dataclass(slots=True)
class Totals:
    name: str
    requests: int = 0
    errors: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    cost_micros: int = 0
    cache_hits: int = 0
    cache_misses: int = 0
    cache_saved_micros: int = 0
    extra: dict[str, str] = field(default_factory=dict)

    def add(self, row: UsageRow) -> None:
        self.requests += row.requests
        self.errors += row.errors
        self.prompt_tokens += row.prompt_tokens
        self.completion_tokens += row.completion_tokens
        self.cached_tokens += row.cached_tokens
        self.cache_write_tokens += row.cache_write_tokens
        self.cache_write_1h_tokens += row.cache_write_1h_tokens
        self.cost_micros += row.cost_micros
        self.cache_hits += row.cache_hits
        self.cache_misses += row.cache_misses
        self.cache_saved_micros += row.cache_saved_micros

    @property
    def hit_ratio(self) -> str:
        """Response cache hits among the lookups (skips aside); '-' when the cache was not asked."""
        asked = self.cache_hits + self.cache_misses
        return f"{100 * self.cache_hits / asked:.1f}%" if asked else "-"

    @property
    def error_rate(self) -> str:
        return f"{100 * self.errors / self.requests:.1f}%" if self.requests else "-"


def group(rows: Sequence[UsageRow], name_of: object) -> list[Totals]:
    assert callable(name_of)
    groups: dict[str, Totals] = {}
    for row in rows:
        name = str(name_of(row))
        groups.setdefault(name, Totals(name)).add(row)
    return sorted(groups.values(), key=lambda t: (-t.cost_micros, -t.requests, t.name))


async def period_usage(request: Request, team_id: str, days: int) -> tuple[int, int, Sequence[UsageRow]]:
    last = now_ms() // DAY_MS
    first = last - days + 1
    return first, last, await daily_usage(get_services(request).db, team_id, first, last)


async def key_names(request: Request, team_id: str) -> dict[str, str]:
    keys = await list_keys(get_services(request).db, team_id)
    return {k.id: f"{k.name or 'unnamed'} ({k.prefix}…)" for k in keys}


@router.get("/usage")
async def usage_page(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    days = int(choice(request, "days", PERIODS, "30"))
    first, last, rows = await period_usage(request, auth.team_id, days)
    names = await key_names(request, auth.team_id)

    def key_label(row: UsageRow) -> str:
        return names.get(row.key_id, NO_KEY) if row.key_id else NO_KEY

    total = Totals("total")
    for row in rows:
        total.add(row)
    charts = {
        "spend_by_model": daily(
            first,
            last,
            rows,
            day=lambda r: r.day,
            label=lambda r: r.model,
            value=lambda r: r.cost_micros / 1e6,
            unit="usd",
        ),
        "spend_by_key": daily(
            first, last, rows, day=lambda r: r.day, label=key_label, value=lambda r: r.cost_micros / 1e6, unit="usd"
        ),
        "tokens": {
            **daily(
                first,
                last,
                [(r.day, "input tokens", r.prompt_tokens) for r in rows]
                + [(r.day, "output tokens", r.completion_tokens) for r in rows],
                day=lambda t: t[0],
                label=lambda t: t[1],
                value=lambda t: float(t[2]),
                unit="count",
                order={"input tokens": 2, "output tokens": 1},
            ),
        },
        "requests": daily(
            first,
            last,
            [(r.day, "requests", r.requests) for r in rows] + [(r.day, "errors", r.errors) for r in rows],
            day=lambda t: t[0],
            label=lambda t: t[1],
            value=lambda t: float(t[2]),
            unit="count",
            order={"requests": 2, "errors": 1},
        ),
    }
    by_day = sorted(group(rows, lambda r: r.day), key=lambda t: -int(t.name))
    for t in by_day:
        t.extra["day"] = day(int(t.name))
    team = await get_team(get_services(request).db, auth.team_id)  # fresh: the auth context may be cached
    context = {
        "title": "Usage",
        "active": "usage",
        "days": days,
        "periods": PERIODS,
        "total": total,
        "charts": charts,
        "by_day": by_day,
        "by_model": group(rows, lambda r: r.model),
        "by_key": group(rows, key_label),
        "first_label": day(first),
        "last_label": day(last),
        "cache_on": team.cache != "off",
        "cache_mode": team.cache,
        "cache_tool_calls": team.cache_tool_calls,
        "can_purge": allows(auth.team_role, Permission.PURGE_CACHE),
        "can_set_cache": allows(auth.team_role, Permission.MANAGE_CACHE),
    }
    return render(request, "team/usage.html", context)


@router.post("/usage/cache")
async def set_cache(request: Request, auth: AuthContext = Depends(team_with(Permission.MANAGE_CACHE))) -> Response:
    """The team's response cache (off | team | key) and whether answers with tool calls are stored: the
    operator's `set_cache`, as the admin API's `PATCH /admin/v1/teams/{team}` (turned off, it purges)."""
    form = await request.form()
    mode, tool_calls = form.get("cache"), form.get("cache_tool_calls")
    operator = Operator.for_services(get_services(request), console_actor(request, auth))
    await operator.set_cache(auth.team_id, cache=mode if isinstance(mode, str) else "", tool_calls=tool_calls == "on")
    return RedirectResponse(f"{console_root(request)}/usage", status_code=303)


@router.post("/usage/cache/purge")
async def purge_cache(request: Request, auth: AuthContext = Depends(team_with(Permission.PURGE_CACHE))) -> Response:
    """Remove every answer the team's response cache holds (admin keys; the API's `DELETE /api/v1/cache`)."""
    services = get_services(request)
    gone = await services[RESPONSE_CACHE].purge(auth.team_id)
    async with services.db.begin() as conn:
        actor = request_actor(request, "team_console", key_id=auth.key_id)
        after = {"entries_purged": gone}
        await audit.record(conn, actor, "team.cache_purge", team_id=auth.team_id, target=auth.team_id, after=after)
    return RedirectResponse(f"{console_root(request)}/usage", status_code=303)


@router.get("/usage.csv")
async def usage_csv(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    days = int(choice(request, "days", PERIODS, "30"))
    _, last, rows = await period_usage(request, auth.team_id, days)
    names = await key_names(request, auth.team_id)
    header = (
        "day",
        "key_id",
        "key",
        "model",
        "requests",
        "errors",
        "prompt_tokens",
        "completion_tokens",
        "cached_tokens",
        "cache_write_tokens",
        "cache_write_1h_tokens",
        "cost_usd",
        "cache_hits",
        "cache_misses",
        "cache_saved_usd",
    )
    out = [
        (
            day(r.day),
            r.key_id,
            names.get(r.key_id, "") if r.key_id else "",
            r.model,
            r.requests,
            r.errors,
            r.prompt_tokens,
            r.completion_tokens,
            r.cached_tokens,
            r.cache_write_tokens,
            r.cache_write_1h_tokens,
            usd_plain(r.cost_micros),
            r.cache_hits,
            r.cache_misses,
            usd_plain(r.cache_saved_micros),
        )
        for r in rows
    ]
    return csv_response(f"usage-{day(last)}-{days}d.csv", header, out)
