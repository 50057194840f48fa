"""Issue 33 item 5, through a real `modelport serve`: integers in task headers and console form fields are read
by the one strict parser (`modelport.strict_int`). `²` (which `str.isdigit()` accepts and `int()` refuses)
used to answer 500, `٣` (which `int()` reads as 3) was taken as a number; both are a 400 naming the field, in
the host's shape, and the connection stays usable."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.integration.console.conftest import ADMIN_TOKEN, ConsoleServer
from tests.support.console import ConsoleClient

# Sent as latin-1 bytes, as a client would put them in a header; `²`, `³`, `¹` are latin-1 characters.
HEADER_ODD = ["²", "1²", "³0", "¹"]
FORM_ODD = ["²", "1²", "٣", "９"]
TASK_HEADERS = ["X-Task-Timeout", "X-Result-Retention"]
KEY_FORM = {"name": "", "spend_limit": "", "period": "month", "models": "", "rpm": "", "tpm": "", "expires": ""}


@pytest.fixture(scope="module")
def boss(console_server: ConsoleServer) -> tuple[str, str]:
    """An admin key (secret, id) of a team without balance: a task that passed the header checks is a 402."""
    console_server.team("strict-forms", topup_usd="")
    made = console_server.admin("POST", "/teams/strict-forms/keys", json={"name": "boss", "role": "admin"})
    data = made.json()["data"]
    return data["key"], data["id"]


@pytest.mark.parametrize("odd", HEADER_ODD)
def test_task_headers_with_odd_digits_are_400(console_server: ConsoleServer, boss: tuple[str, str], odd: str) -> None:
    headers = {"Authorization": f"Bearer {boss[0]}"}
    with httpx.Client(base_url=console_server.media_url, headers=headers, timeout=30) as media:
        for name in TASK_HEADERS:
            answer = media.post(
                "/local/sketch-image", json={"prompt": "a"}, headers={name.encode(): odd.encode("latin-1")}
            )
            assert answer.status_code == 400, (name, odd, answer.status_code, answer.text[:300])
            assert answer.json()["code"] == 400 and name in answer.json()["message"], answer.text
            assert media.get("/healthz").status_code == 200  # the same connection answers the next request
        waited = media.post(
            "/local/sketch-image", json={"prompt": "a"}, headers={b"Prefer": f"wait={odd}".encode("latin-1")}
        )
        assert waited.status_code == 400 and "Prefer" in waited.json()["message"], waited.text
        # A plain number passes the header checks (the team has no balance: 402, nothing runs).
        fine = media.post("/local/sketch-image", json={"prompt": "a"}, headers={"X-Task-Timeout": "60"})
        assert fine.status_code == 402, fine.text


@pytest.fixture
def team_console(console_server: ConsoleServer, boss: tuple[str, str]) -> Iterator[ConsoleClient]:
    client = ConsoleClient(console_server.media_url)
    assert client.sign_in(boss[0]).status_code == 303
    yield client
    client.close()


@pytest.mark.parametrize("odd", FORM_ODD)
def test_key_form_integers_with_odd_digits_are_400(
    console_server: ConsoleServer, team_console: ConsoleClient, boss: tuple[str, str], odd: str
) -> None:
    operator = ConsoleClient(console_server.media_url)
    try:
        assert operator.post_form("/admin/sign-in", {"admin_token": ADMIN_TOKEN}).status_code == 303
        team_id = console_server.admin("GET", "/teams/strict-forms").json()["data"]["id"]
        for field in ("rpm", "tpm", "expires"):
            form = {**KEY_FORM, "name": f"odd-{field}", field: odd, "role": "member"}
            for client, path, csrf_from in (
                (team_console, "/keys", "/keys"),
                (team_console, f"/keys/{boss[1]}/edit", "/keys"),
                (operator, f"/admin/teams/{team_id}/keys", f"/admin/teams/{team_id}"),
            ):
                answer = client.post_form(path, form, csrf_from=csrf_from)
                where = (path, field, odd, answer.status_code, answer.text[:300])
                if client is operator:  # the operator console goes back to the team page, with the refusal
                    assert answer.status_code == 303, where
                    answer = client.http.get(console_server.media_url + answer.headers["location"])
                    assert answer.status_code == 200, where
                else:
                    assert answer.status_code == 400, where
                assert answer.headers["content-type"].startswith("text/html"), where
                assert f"{field} must be" in answer.text or f"{field}: " in answer.text, where
    finally:
        operator.close()
    keys = console_server.admin("GET", "/teams/strict-forms/keys").json()["data"]["keys"]
    assert not [k for k in keys if str(k["name"]).startswith("odd-")]  # nothing was created
    assert {k["rpm"] for k in keys} == {None}  # nor changed
