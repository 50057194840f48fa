"""The media app in this process (httpx's ASGI transport, no `serve`): a team with one person per role and
an admin and a member key, console clients signed in as each person, and the audit log's events. For tests
of the team API and the console that need no second process."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy.ext.asyncio import AsyncEngine

from modelport.accounts import service as accounts
from modelport.accounts.audit import Actor, AuditFilter, list_events
from modelport.apps.assemble import build_services
from modelport.apps.media import create_media_app
from modelport.operator.people import People
from modelport.services import Services
from modelport.settings import load_settings

PUBLIC = "http://media.test"
PASSWORD = "a long enough passphrase 42"
ROLES = ("owner", "admin", "developer", "viewer")
OPERATOR = Actor("operator_cli")
_CSRF = re.compile(r'name="csrf_token" value="([^"]+)"')


def csrf_of(page: str) -> str:
    found = _CSRF.search(page)
    assert found is not None, "no CSRF field on the page"
    return found.group(1)


def link_path(url: str) -> str:
    """`/console/reset/...` of a full `{media}/console/reset/...` link."""
    assert url.startswith(PUBLIC + "/console/"), url
    return url[len(PUBLIC) :]


@dataclass
class MediaApp:
    services: Services
    transport: httpx.ASGITransport
    team_id: str = ""
    admin_key: str = ""
    admin_key_id: str = ""
    member_key: str = ""
    user_ids: dict[str, str] = field(default_factory=dict)  # by role (and by any other name given)
    emails: dict[str, str] = field(default_factory=dict)
    _clients: list[httpx.AsyncClient] = field(default_factory=list)

    @property
    def engine(self) -> AsyncEngine:
        return self.services.db

    def client(self) -> httpx.AsyncClient:
        """A new client with cookies of its own (closed with the app)."""
        made = httpx.AsyncClient(transport=self.transport, base_url=PUBLIC, follow_redirects=False)
        self._clients.append(made)
        return made

    async def api(self, method: str, path: str, *, key: str | None = None, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key or self.admin_key}"}
        async with httpx.AsyncClient(transport=self.transport, base_url=PUBLIC) as http:
            return await http.request(method, path, headers=headers, **kwargs)

    async def person(
        self, name: str, role: str | None, *, team: str | None = None, operator_role: str | None = None
    ) -> str:
        """A user (a member of `team`, default this app's team, with `role`), not yet set up: their id."""
        people = People(self.engine, self.services.settings, actor=OPERATOR)
        in_team = None if role is None else (team or self.team_id)
        user, _, _ = await people.create_user(
            f"{name}@team.example", name=name, operator_role=operator_role, team=in_team, role=role
        )
        self.user_ids[name], self.emails[name] = user.id, user.email
        return user.id

    async def open_link(self, url: str, password: str = PASSWORD) -> httpx.AsyncClient:
        """A new client that opens a setup or reset link and sets the password: signed in as its person."""
        client = self.client()
        path = link_path(url)
        page = await client.get(path)
        assert page.status_code == 200, page.text
        form = {"password": password, "password_again": password, "csrf_token": csrf_of(page.text)}
        answer = await client.post(path, data=form)
        assert answer.status_code == 303, answer.text
        return client

    async def signed_in(self, name: str) -> httpx.AsyncClient:
        """A console session of the person `name` (their password set through a fresh setup link)."""
        url, _ = await People(self.engine, self.services.settings, actor=OPERATOR).reset_link(self.user_ids[name])
        return await self.open_link(url)

    async def events(self, action: str) -> list[dict[str, Any]]:
        """The audit log's events of `action`, newest first."""
        return await list_events(self.engine, AuditFilter(action=action), limit=100)


async def post_form(client: httpx.AsyncClient, path: str, data: dict[str, str], *, page: str) -> httpx.Response:
    """A console form, with the CSRF token of the page `page` (a GET first, as a browser does)."""
    shown = await client.get(page)
    assert shown.status_code == 200, shown.text
    return await client.post(path, data={**data, "csrf_token": csrf_of(shown.text)})


@asynccontextmanager
async def media_app(engine: AsyncEngine, tmp_path: Path) -> AsyncIterator[MediaApp]:
    """The app with a team `people` that has one member per role (`owner`, `admin`, ...) and two keys."""
    settings = load_settings(data_dir=tmp_path, public_media_url=PUBLIC, auth_cache_seconds=0)
    services = build_services(settings, engine=engine)
    app = MediaApp(services, httpx.ASGITransport(app=create_media_app(services)))
    await services.start()
    try:
        app.team_id = (await accounts.create_team(engine, "people", tier="free")).id
        for role in ROLES:
            await app.person(role, role)
        admin_key = await accounts.create_key(engine, app.team_id, fields={"role": "admin"})
        app.admin_key, app.admin_key_id = admin_key.key, admin_key.record.id
        app.member_key = (await accounts.create_key(engine, app.team_id, fields={"role": "member"})).key
        yield app
    finally:
        for client in app._clients:
            await client.aclose()
        await services.aclose()
