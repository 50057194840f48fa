"""Operator alert settings: the exact environment names, the whsec_ secret required with the URL, the URL
held to the rules of task webhook URLs at start-up, and seconds-long thresholds."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from pydantic import ValidationError

from modelport.alerts.service import check_operator_url
from modelport.settings import Settings, is_webhook_secret

SECRET = "whsec_" + base64.b64encode(b"k" * 32).decode()


def test_environment_names_and_seconds_long_thresholds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MODELPORT_OPERATOR_WEBHOOK_URL", "https://ops.example/hook")
    monkeypatch.setenv("MODELPORT_OPERATOR_WEBHOOK_SECRET", SECRET)
    monkeypatch.setenv("MODELPORT_ALERTS__TASK_BACKLOG_SECONDS", "1.5")
    monkeypatch.setenv("MODELPORT_ALERTS__CHECK_INTERVAL_SECONDS", "0.5")
    monkeypatch.setenv("MODELPORT_ALERTS__STORAGE_FREE_PERCENT", "12.5")
    monkeypatch.setenv("MODELPORT_UPSTREAM_COOLDOWN_SECONDS", "2")
    settings = Settings(data_dir=tmp_path)
    assert settings.operator_webhook_url == "https://ops.example/hook"
    secret = settings.operator_webhook_secret
    assert secret is not None and secret.get_secret_value() == SECRET
    assert (settings.alerts.task_backlog_seconds, settings.alerts.check_interval_seconds) == (1.5, 0.5)
    assert settings.alerts.storage_free_percent == 12.5 and settings.upstream_cooldown_seconds == 2
    assert SECRET not in repr(settings) and settings.safe_summary()["operator_alerts"] is True


def test_the_url_needs_a_whsec_secret(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="needs MODELPORT_OPERATOR_WEBHOOK_SECRET"):
        Settings(data_dir=tmp_path, operator_webhook_url="https://ops.example/hook")
    for bad in ("secret", "whsec_", "whsec_" + base64.b64encode(b"short").decode(), "whsec_not base64!"):
        assert not is_webhook_secret(bad)
        with pytest.raises(ValidationError, match="Standard Webhooks secret"):
            Settings(data_dir=tmp_path, operator_webhook_url="https://ops.example/hook", operator_webhook_secret=bad)
    unset = Settings(data_dir=tmp_path, operator_webhook_url="", operator_webhook_secret="")
    assert unset.operator_webhook_url is None and unset.safe_summary()["operator_alerts"] is False


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("http://ops.example/hook", "https"),
        ("https://user:pw@ops.example/hook", "https"),
        ("https://10.1.2.3/hook", "private"),
        ("https://127.0.0.1:8443/hook", "loopback"),
        ("ftp://ops.example/hook", "https"),
    ],
)
async def test_the_url_follows_the_webhook_url_rules(tmp_path: Path, url: str, refused: str) -> None:
    settings = Settings(data_dir=tmp_path, operator_webhook_url=url, operator_webhook_secret=SECRET)
    with pytest.raises(ValueError, match=rf"MODELPORT_OPERATOR_WEBHOOK_URL is refused: .*{refused}"):
        await check_operator_url(settings)


async def test_an_allow_listed_local_receiver_is_accepted(tmp_path: Path) -> None:
    settings = Settings(
        data_dir=tmp_path,
        operator_webhook_url="http://127.0.0.1:9911/hook",
        operator_webhook_secret=SECRET,
        net={"allow_hosts": "127.0.0.1:9911"},
    )
    await check_operator_url(settings)
    await check_operator_url(Settings(data_dir=tmp_path))  # no URL: nothing to check
