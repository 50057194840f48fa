"""Request logs: the `/v1/logs` rows with filters (time, model, status, svc_user_id), a detail view with
the retained input and result, CSV export and a live tail over server-sent events."""

from __future__ import annotations

import asyncio
import csv
import io
import time
from collections.abc import AsyncIterator, Sequence
from typing import Any
from urllib.parse import urlencode

import msgspec
from fastapi import APIRouter, Depends
from sqlalchemy.ext.asyncio import AsyncEngine
from starlette.requests import Request
from starlette.responses import Response, StreamingResponse

from modelport.accounts import console_sessions
from modelport.accounts.auth import AuthContext
from modelport.accounts.permissions import Permission, allows
from modelport.clock import now_ms
from modelport.console.deps import require_team
from modelport.console.forms import as_field, csv_cell, cursor, enum_choice, optional_text, utc_minute
from modelport.console.sessions import session_token
from modelport.console.templating import render, render_fragment, usd_plain, when
from modelport.errors import InvalidParameters, NotFound
from modelport.requestlog import browse
from modelport.requestlog.params import MAX_SPAN_SECONDS, SVC_USER_ID_RE
from modelport.requestlog.record import RequestStatus
from modelport.requestlog.store import DAY_MS
from modelport.requestlog.usage import daily_usage
from modelport.web.deps import get_services

router = APIRouter()

PAGE_SIZE = 50
STATUSES = ("", *RequestStatus)
TAIL_POLL_SECONDS = 2.0
TAIL_MAX_SECONDS = 300.0  # the browser's EventSource reconnects; a stream never outlives a deploy by long
EXPORT_CHUNK = 1000
_decoder = msgspec.json.Decoder()
_pretty = msgspec.json.Encoder()


def log_filter(request: Request) -> browse.LogFilter:
    now = now_ms()
    hi = utc_minute(request, "to")
    hi = now + 1 if hi is None else hi + 60_000  # the `to` minute is included
    lo = utc_minute(request, "from")
    lo = hi - DAY_MS if lo is None else lo
    if hi <= lo:
        raise InvalidParameters("'to' must be after 'from'", param="to")
    if hi - lo > (MAX_SPAN_SECONDS + 60) * 1000:
        raise InvalidParameters("the period is at most 30 days", param="from")
    model = optional_text(request, "model", max_len=301)
    provider, name = None, None
    if model is not None:
        provider, sep, name = model.partition("/")
        if not sep:
            provider, name = None, model
    status = enum_choice(request, "status", RequestStatus)
    user = optional_text(request, "svc_user_id", max_len=128)
    if user is not None and not SVC_USER_ID_RE.fullmatch(user):
        raise InvalidParameters("svc_user_id is 8 to 128 letters, digits, '-' or '_'", param="svc_user_id")
    return browse.LogFilter(lo, hi, provider, name, status, user)


FILTER_FIELDS = ("from", "to", "model", "status", "svc_user_id")


def _query_string(request: Request) -> str:
    keep = {k: v for k, v in request.query_params.items() if k in FILTER_FIELDS and v}
    return urlencode(keep)


async def _models(engine: AsyncEngine, team_id: str, f: browse.LogFilter) -> list[str]:
    rows = await daily_usage(engine, team_id, f.lo_ms // DAY_MS, (f.hi_ms - 1) // DAY_MS)
    return sorted({r.model for r in rows})


@router.get("/logs")
async def logs_page(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    engine = get_services(request).db
    f = log_filter(request)
    before = cursor(request)
    rows = await browse.page(engine, auth.team_id, f, before=before, limit=PAGE_SIZE + 1)
    more = len(rows) > PAGE_SIZE
    rows = rows[:PAGE_SIZE]
    query = _query_string(request)
    context = {
        "title": "Request logs",
        "active": "logs",
        "rows": rows,
        "older": f"{rows[-1].created_at_ms}~{rows[-1].id}" if more and rows else None,
        "first_page": before is None,
        "query": query,
        "f": f,
        "from_value": as_field(f.lo_ms),
        "to_value": as_field(f.hi_ms - 60_000) if request.query_params.get("to") else "",
        "models": await _models(engine, auth.team_id, f),
        "model_value": request.query_params.get("model", ""),
        "statuses": STATUSES,
        "tail_after": f"{rows[0].created_at_ms}~{rows[0].id}" if rows else "",
    }
    return render(request, "team/logs.html", context)


def _payload(text: str | None) -> str | None:
    if text is None:
        return None
    try:
        return msgspec.json.format(_pretty.encode(_decoder.decode(text)), indent=2).decode()
    except msgspec.DecodeError:
        return text


@router.get("/logs/{request_id}")
async def log_detail(request: Request, request_id: str, auth: AuthContext = Depends(require_team)) -> Response:
    if len(request_id) > 64:
        raise NotFound("no such request")
    row = await browse.one(get_services(request).db, auth.team_id, request_id)
    if row is None:
        raise NotFound(f"no request {request_id!r} in your team's log")
    payloads = allows(auth.team_role, Permission.READ_PAYLOADS)  # viewers see the log without bodies
    context = {
        "title": "Request",
        "active": "logs",
        "row": row,
        "input": _payload(row.input) if payloads else None,
        "result": _payload(row.result) if payloads else None,
        "payloads_hidden": not payloads,
    }
    return render(request, "team/log_detail.html", context)


CSV_HEADER = (
    "request_id",
    "created_at",
    "status",
    "model",
    "endpoint",
    "prompt_tokens",
    "completion_tokens",
    "cached_tokens",
    "cache_write_tokens",
    "cache_write_1h_tokens",
    "price_tier",
    "cost_usd",
    "svc_user_id",
    "key_id",
    "error",
    # Appended (issue 37), so readers of the earlier columns by position keep working.
    "cache",  # hit | miss | skip; empty when the team's response cache is off
    "served_model",  # the fallback model that answered; empty when the requested model did
    "previous_response_id",
    "conversation_id",
)


def _csv_row(r: Any) -> Sequence[object]:
    return (
        r.id,
        when(r.created_at_ms),
        r.status,
        f"{r.provider}/{r.model_name}",
        r.endpoint,
        r.prompt_tokens,
        r.completion_tokens,
        r.cached_tokens,
        r.cache_write_tokens,
        r.cache_write_1h_tokens,
        r.price_tier or "",
        usd_plain(int(r.cost_micros)),
        r.svc_user_id or "",
        r.key_id or "",
        r.error or "",
        r.cache or "",
        r.served_model or "",
        r.previous_response_id or "",
        r.conversation_id or "",
    )


@router.get("/logs.csv")
async def logs_csv(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    engine = get_services(request).db
    f = log_filter(request)
    team_id = auth.team_id

    # Pages of EXPORT_CHUNK rows by cursor: each query is short, none holds a snapshot open for the export.
    async def chunks() -> AsyncIterator[Sequence[Any]]:
        before: tuple[int, str] | None = None
        while True:
            rows = await browse.page(engine, team_id, f, before=before, limit=EXPORT_CHUNK)
            if not rows:
                return
            yield rows
            if len(rows) < EXPORT_CHUNK:
                return
            before = (int(rows[-1].created_at_ms), str(rows[-1].id))

    return csv_response_async(f"request-logs-{as_field(f.hi_ms)[:10]}.csv", chunks())


def csv_response_async(filename: str, chunks: AsyncIterator[Sequence[Any]]) -> StreamingResponse:
    async def body() -> AsyncIterator[str]:
        buffer = io.StringIO()
        writer = csv.writer(buffer)
        writer.writerow(CSV_HEADER)
        async for rows in chunks:
            for r in rows:
                writer.writerow([csv_cell(v) for v in _csv_row(r)])
            yield buffer.getvalue()
            buffer.seek(0)
            buffer.truncate()
        yield buffer.getvalue()

    return StreamingResponse(
        body(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/logs-tail")
async def logs_tail(request: Request, auth: AuthContext = Depends(require_team)) -> Response:
    """Server-sent events: `rows` events carry new table rows (HTML), newest last, every 2 s at most."""
    services = get_services(request)
    # A reconnecting EventSource sends the id of the last event it got: nothing is shown twice or lost.
    resumed = cursor(request, "after", request.headers.get("last-event-id"))
    after = resumed or cursor(request, "after") or await browse.newest(services.db, auth.team_id) or (now_ms(), "")
    team_id = auth.team_id
    token = session_token(request)  # require_team checked it: a valid session's token

    async def events() -> AsyncIterator[str]:
        nonlocal after
        yield "retry: 3000\n\n"
        deadline = time.monotonic() + TAIL_MAX_SECONDS
        while time.monotonic() < deadline and not services.draining:
            if await request.is_disconnected():
                return
            # The session may have ended since the stream started (sign-out, revocation, suspension).
            alive = token is not None and await _still_signed_in(services.db, token, auth)
            if not alive:
                yield "event: signed-out\ndata: \n\n"
                return
            rows = await browse.newer(services.db, team_id, after, limit=200)
            if rows:
                after = (int(rows[-1].created_at_ms), str(rows[-1].id))
                html = render_fragment(request, "team/log_rows.html", {"rows": rows})
                data = "".join(f"data: {line}\n" for line in html.splitlines() if line.strip())
                yield f"event: rows\nid: {after[0]}~{after[1]}\n{data}\n"
            else:
                yield ": keep-alive\n\n"
            await asyncio.sleep(TAIL_POLL_SECONDS)

    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}
    return StreamingResponse(events(), media_type="text/event-stream", headers=headers)


async def _still_signed_in(engine: AsyncEngine, token: str, auth: AuthContext) -> bool:
    """The stream's session is live: a person still a member of the team, or the key's session valid."""
    if auth.user_id is not None:
        found = await console_sessions.person_session(engine, token, user_id=auth.user_id)
        return found is not None and found.team_id == auth.team_id and found.team_role is not None
    return await console_sessions.team_session_valid(engine, token, team_id=auth.team_id, key_id=auth.key_id)
