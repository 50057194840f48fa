"""Both consoles: the operator sets a team's cache and purges it; the team's usage page shows the hit ratio
and the money saved, `usage.csv` the hits, misses and savings, and an admin key purges from there; a team
owner sets the cache from there (off purges), a developer or viewer cannot."""

from __future__ import annotations

import csv
import html
import io
import secrets
import time

from tests.integration.gateway.conftest import ADMIN_TOKEN
from tests.integration.response_cache.asking import ask
from tests.integration.response_cache.conftest import Cached
from tests.support.accounts import set_password
from tests.support.console import ConsoleClient
from tests.support.fake_upstream import Reply, Usage


def _hit(srv: Cached, key: str, prompt: str) -> None:
    deadline = time.monotonic() + 5
    while ask(srv, key, "chat", "fake/chat", prompt).cache != "hit":
        assert time.monotonic() < deadline
        time.sleep(0.1)


def _stat(page: str, name: str) -> str:
    return page.split(f'id="{name}">', 1)[1].split("<", 1)[0]


def test_the_operator_console_sets_and_purges_the_cache(srv: Cached) -> None:
    team, key = srv.team("off")
    team_id = srv.admin("GET", f"/teams/{team}").json()["data"]["id"]
    console = ConsoleClient(srv.server.media_url)
    try:
        assert console.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
        page = f"/admin/teams/{team_id}"
        assert 'id="cache-mode"' in console.get(page).text
        saved = console.post_form(f"{page}/cache", {"cache": "team", "cache_tool_calls": "on"}, csrf_from=page)
        assert saved.status_code == 303
        shown = srv.admin("GET", f"/teams/{team}").json()["data"]
        assert shown["cache"] == "team" and shown["cache_tool_calls"] is True
        prompt = "console " + secrets.token_hex(6)
        assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"
        _hit(srv, key, prompt)
        assert console.post_form(f"{page}/cache/purge", {}, csrf_from=page).status_code == 303
        assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"
    finally:
        console.close()


def test_the_team_usage_page_shows_the_hit_ratio_and_the_money_saved(srv: Cached) -> None:
    team, member = srv.team()
    admin_key = srv.key(team, "admin")
    prompt = "usage " + secrets.token_hex(6)
    srv.upstream.push(Reply.text("counted", usage=Usage(input_tokens=100, output_tokens=50)))
    assert ask(srv, member, "chat", "fake/chat", prompt).cache == "miss"
    _hit(srv, member, prompt)
    assert ask(srv, member, "chat", "fake/chat", prompt).cache == "hit"  # hits 2, misses 1 (and any retries)
    console = ConsoleClient(srv.server.media_url)
    try:
        assert console.sign_in(admin_key).status_code == 303
        # The rollups follow the log rows, written in batches: the first batch may hold only the miss (a
        # page showing 0.0% then, as CI saw), so wait until the export counts all three requests.
        deadline = time.monotonic() + 10
        while True:
            rows = list(csv.DictReader(io.StringIO(console.get("/usage.csv").text)))
            hits, misses = sum(int(r["cache_hits"]) for r in rows), sum(int(r["cache_misses"]) for r in rows)
            if hits >= 2 and misses >= 1:
                break
            assert time.monotonic() < deadline, (hits, misses)
            time.sleep(0.3)
        ratio = _stat(page := console.get("/usage").text, "cache-hit-ratio")
        assert ratio.endswith("%") and float(ratio[:-1]) >= 50, ratio
        assert "0.0002" in _stat(page, "cache-saved") or "0.0003" in _stat(page, "cache-saved"), page
        assert sum(float(r["cache_saved_usd"]) for r in rows) >= 0.0002 - 1e-9  # two hits, each 0.0001 saved
        assert console.post_form("/usage/cache/purge", {}, csrf_from="/usage").status_code == 303
        assert ask(srv, member, "chat", "fake/chat", prompt).cache == "miss"
    finally:
        console.close()
    member_console = ConsoleClient(srv.server.media_url)
    try:
        assert member_console.sign_in(member).status_code == 303
        assert "Purge response cache" not in member_console.get("/usage").text
        refused = member_console.post_form("/usage/cache/purge", {}, csrf_from="/usage")
        assert refused.status_code == 403
    finally:
        member_console.close()


def _person(srv: Cached, team: str, role: str) -> ConsoleClient:
    email = f"{role}-{secrets.token_hex(4)}@cache.example"
    made = srv.admin("POST", "/users", json={"email": email, "team": team, "role": role})
    assert made.status_code == 200, made.text
    return set_password(srv.server, made.json()["data"]["setup_url"])


def test_a_team_owner_sets_the_cache_from_the_usage_page_and_off_purges(srv: Cached) -> None:
    team, key = srv.team("off")
    owner = _person(srv, team, "owner")
    try:
        page = owner.get("/usage").text
        assert 'id="cache-mode"' in page and '<option value="off" selected>' in page
        assert "Purge response cache" not in page  # nothing to purge while the cache is off
        saved = owner.post_form("/usage/cache", {"cache": "team", "cache_tool_calls": "on"}, csrf_from="/usage")
        assert saved.status_code == 303, saved.text
        shown = srv.admin("GET", f"/teams/{team}").json()["data"]
        assert shown["cache"] == "team" and shown["cache_tool_calls"] is True
        assert '<option value="team" selected>' in (page := owner.get("/usage").text), page
        assert "Purge response cache" in page
        prompt = "team console " + secrets.token_hex(6)
        assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"
        _hit(srv, key, prompt)
        refused = owner.post_form("/usage/cache", {"cache": "sometimes"}, csrf_from="/usage")
        assert refused.status_code == 400 and srv.admin("GET", f"/teams/{team}").json()["data"]["cache"] == "team"
        off = owner.post_form("/usage/cache", {"cache": "off"}, csrf_from="/usage")
        assert off.status_code == 303, off.text
        shown = srv.admin("GET", f"/teams/{team}").json()["data"]
        assert shown["cache"] == "off" and shown["cache_tool_calls"] is False
        assert ask(srv, key, "chat", "fake/chat", prompt).cache is None  # off: no header at all
        # Back on: the entry cached before was purged when the cache went off, so this is a miss.
        assert owner.post_form("/usage/cache", {"cache": "team"}, csrf_from="/usage").status_code == 303
        assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"
    finally:
        owner.close()
    events = srv.admin("GET", "/audit", params={"team": team}).json()["data"]["events"]
    mine = [e for e in events if e["action"] == "team.flags" and e["actor"]["kind"] == "user"]
    assert [e["after"] for e in reversed(mine)] == [
        {"cache": "team", "cache_tool_calls": True},
        {"cache": "off", "cache_tool_calls": False},
        {"cache": "team", "cache_tool_calls": False},
    ], events
    assert all(e["actor"]["email"].startswith("owner-") for e in mine)


def test_a_developer_or_viewer_sees_no_cache_form_and_is_refused(srv: Cached) -> None:
    team, key = srv.team("team")
    for role in ("developer", "viewer"):
        person = _person(srv, team, role)
        try:
            page = person.get("/usage")
            assert page.status_code == 200 and 'id="cache-mode"' not in page.text
            refused = person.post_form("/usage/cache", {"cache": "off"}, csrf_from="/usage")
            assert refused.status_code == 403, (role, refused.status_code)
            assert "your role in this team does not allow this" in html.unescape(refused.text)
        finally:
            person.close()
    assert srv.admin("GET", f"/teams/{team}").json()["data"]["cache"] == "team"
    prompt = "still on " + secrets.token_hex(6)
    assert ask(srv, key, "chat", "fake/chat", prompt).cache == "miss"
    _hit(srv, key, prompt)
