"""The long commands' progress on a real terminal (a pseudo-terminal): `migrate` counts the migrations
applied, `admin prune` the expired request log rows removed, `admin logs export --out` the rows written and
`admin backup` the pages copied; under `--json` or through a pipe they print only their own output."""

from __future__ import annotations

import asyncio
import errno
import os
import pty
import subprocess
import sys
import time
from pathlib import Path

from modelport.accounts import service as accounts
from modelport.requestlog.record import LogRecord
from modelport.requestlog.store import insert_logs
from modelport.storage.db import create_engine
from modelport.storage.migrate import MIGRATIONS_DIR

DAY_MS = 86_400_000


def _env(data_dir: Path, url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("MODELPORT_")}
    env["MODELPORT_DATA_DIR"], env["MODELPORT_DATABASE_URL"] = str(data_dir), url
    env["MODELPORT_RETENTION__REQUEST_LOGS_DAYS"] = "1"
    return env


async def fill(url: str, old: int) -> None:
    """`old` request log rows of 10 days ago (past a 1-day window) and one of now."""
    engine = create_engine(url)
    try:
        team = await accounts.create_team(engine, "pruned", tier="free")
        now = int(time.time() * 1000)
        past = now - 10 * DAY_MS
        rows = [LogRecord(f"req_old_{k}", team.id, past + k, "success", "p", "m", "chat") for k in range(old)]
        rows.append(LogRecord("req_new", team.id, now, "success", "p", "m", "chat"))
        assert await insert_logs(engine, rows) == old + 1
    finally:
        await engine.dispose()


def on_terminal(args: list[str], env: dict[str, str]) -> tuple[int, str]:
    """Run `modelport ARGS` with stdout and stderr on a pseudo-terminal; its exit code and what it drew."""
    main, child = pty.openpty()
    process = subprocess.Popen([sys.executable, "-m", "modelport", *args], env=env, stdout=child, stderr=child)
    os.close(child)
    drawn = b""
    while True:
        try:
            chunk = os.read(main, 65536)
        except OSError as exc:  # EIO: the child closed its end
            if exc.errno != errno.EIO:
                raise
            break
        if not chunk:
            break
        drawn += chunk
    os.close(main)
    return process.wait(timeout=120), drawn.decode(errors="replace")


def test_migrate_and_prune_show_progress_on_a_terminal_only(tmp_path: Path) -> None:
    data_dir = tmp_path / "data"
    data_dir.mkdir(mode=0o700)
    url = f"sqlite+aiosqlite:///{data_dir / 'modelport.db'}"
    env = _env(data_dir, url)
    migrations = len(list((MIGRATIONS_DIR / "versions").glob("[0-9]*.py")))

    code, drawn = on_terminal(["migrate"], env)
    assert code == 0, drawn
    assert "migrating" in drawn and f"{migrations}/{migrations}" in drawn
    assert "schema is up to date" in drawn

    asyncio.run(fill(url, old=7))
    code, drawn = on_terminal(["admin", "prune"], env)
    assert code == 0, drawn
    assert "pruning request logs" in drawn and "7/7" in drawn

    code, drawn = on_terminal(["admin", "prune", "--json"], env)
    assert code == 0, drawn
    assert "pruning request logs" not in drawn and drawn.lstrip().startswith("{")

    # The one row left (of now), exported to a file, and the database backed up, each with its progress.
    window = ["--team", "pruned", "--since", "2000-01-01T00:00:00Z", "--until", "2100-01-01T00:00:00Z"]
    code, drawn = on_terminal(["admin", "logs", "export", *window, "--out", str(tmp_path / "rows.jsonl")], env)
    assert code == 0, drawn
    assert "exporting" in drawn and "1/1" in drawn and "exported 1 rows" in drawn
    code, drawn = on_terminal(["admin", "backup", str(tmp_path / "copy")], env)
    assert code == 0, drawn
    assert "copying the database" in drawn and "pages/s" in drawn and "database copied to" in drawn

    piped = subprocess.run(
        [sys.executable, "-m", "modelport", "admin", "prune"], env=env, capture_output=True, text=True, timeout=120
    )
    assert piped.returncode == 0, piped.stderr
    assert piped.stderr == "" and piped.stdout.startswith("removed ")
