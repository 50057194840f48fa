"""What `modelport serve` keeps on disk stays private (issue 21, items 10 and 14), through real starts.

- The data directory is created 0700 and what the service writes there 0600; an existing looser
  directory gets a warning in the banner.
- Webhook signing secrets are stored encrypted under a key derived from the secret key: rows from
  before (plain `whsec_` text) keep working and are sealed at the next start; rotating the secret key
  with MODELPORT_PREVIOUS_SECRET_KEY keeps every secret; a key that opens nothing stops the start.
- An admin token shorter than 32 characters stops the start, saying why, without echoing it.
"""

from __future__ import annotations

import sqlite3
import stat
import subprocess
import sys
from pathlib import Path

import httpx

from tests.support.media_make import image
from tests.support.server import run_server, server_env

OLD_KEY = "private-data-old-secret-key-0123456789abcdef"
NEW_KEY = "private-data-new-secret-key-0123456789abcdef"


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def failed_start(data_dir: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "modelport", "serve", "--media-port", "0", "--text-port", "0"],
        env=server_env(data_dir, **env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def stored_secret(data_dir: Path) -> str:
    with sqlite3.connect(data_dir / "modelport.db") as db:
        (value,) = db.execute("SELECT secret FROM webhook_secrets").fetchone()
    return str(value)


def test_a_new_data_directory_and_its_files_are_private(tmp_path: Path) -> None:
    data_dir = tmp_path / "fresh" / "var"
    with run_server(data_dir, fresh_database=True) as server:
        assert not any(line.startswith("warning: the data directory") for line in server.banner)
        assert mode(data_dir) == 0o700
        for name in ("modelport.db", "secret_key"):
            assert mode(data_dir / name) == 0o600, name
        # What it writes while serving too (the SQLite journal, uploaded files).
        upload = httpx.post(
            server.media_url + "/api/v1/media/files",
            headers={"Authorization": f"Bearer {server.demo_key}"},
            files={"file": ("a.png", image(8, 8), "image/png")},
            timeout=30,
        )
        assert upload.status_code == 200, upload.text
    written = [p for p in data_dir.rglob("*") if p.is_file()]
    assert written and all(mode(p) == 0o600 for p in written), {str(p): oct(mode(p)) for p in written}
    assert all(mode(p) == 0o700 for p in data_dir.rglob("*") if p.is_dir())


def test_an_existing_open_data_directory_is_named_in_a_warning(tmp_path: Path) -> None:
    data_dir = tmp_path / "var"
    data_dir.mkdir()
    data_dir.chmod(0o755)
    with run_server(data_dir, fresh_database=True) as server:
        warning = [line for line in server.banner if line.startswith("warning: the data directory")]
        assert warning and "mode 0755" in warning[0] and f"chmod 700 {data_dir}" in warning[0]
    assert mode(data_dir) == 0o755  # the operator's choice is warned about, not changed


def test_webhook_secrets_are_encrypted_at_rest_and_survive_a_key_rotation(tmp_path: Path) -> None:
    def secret(server_url: str, key: str | None) -> str:
        r = httpx.get(server_url + "/api/v1/webhooks/secret", headers={"Authorization": f"Bearer {key}"}, timeout=30)
        assert r.status_code == 200, r.text
        return str(r.json()["data"]["secret"])

    with run_server(tmp_path, MODELPORT_SECRET_KEY=OLD_KEY) as server:
        demo = server.demo_key
        made = secret(server.media_url, demo)
        assert made.startswith("whsec_")
        sealed = stored_secret(tmp_path)
        assert sealed.startswith("mpws1.") and made not in sealed and made[6:] not in sealed
        # A row as an older version wrote it (plain text) is read as it is.
        plain = "whsec_" + "QUJD" * 11
        with sqlite3.connect(tmp_path / "modelport.db") as db:
            db.execute("UPDATE webhook_secrets SET secret = ?", (plain,))
        assert secret(server.media_url, demo) == plain

    # Rotation: the new key, the old one as previous. The start seals the plain row under the new key.
    with run_server(tmp_path, MODELPORT_SECRET_KEY=NEW_KEY, MODELPORT_PREVIOUS_SECRET_KEY=OLD_KEY) as server:
        assert stored_secret(tmp_path).startswith("mpws1.")
        assert secret(server.media_url, demo) == plain
        rotated = httpx.post(
            server.media_url + "/api/v1/webhooks/secret/rotate", headers={"Authorization": f"Bearer {demo}"}
        ).json()["data"]["secret"]
        assert rotated != plain and rotated not in stored_secret(tmp_path)

    with run_server(tmp_path, MODELPORT_SECRET_KEY=NEW_KEY) as server:  # the previous key no longer needed
        assert secret(server.media_url, demo) == rotated

    refused = failed_start(tmp_path, MODELPORT_SECRET_KEY="another-secret-key-that-opens-nothing-0123")
    assert refused.returncode != 0
    assert "MODELPORT_PREVIOUS_SECRET_KEY" in refused.stderr + refused.stdout


def test_a_short_admin_token_stops_the_start_and_says_why(tmp_path: Path) -> None:
    short = "s3cr3t-but-only-31-characters.."
    assert len(short) == 31
    result = failed_start(tmp_path, MODELPORT_ADMIN_TOKEN=short)
    assert result.returncode != 0
    assert "MODELPORT_ADMIN_TOKEN must be at least 32 characters" in result.stderr
    assert short not in result.stderr + result.stdout  # the refused value is never echoed
    assert not (tmp_path / "modelport.db").exists()  # refused before anything was done
