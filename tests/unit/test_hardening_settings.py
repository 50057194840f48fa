"""Settings of issue 21: the admin token's minimum length, trusted proxies, the public text-gateway URL."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from modelport.settings import Settings


def test_admin_token_needs_32_characters_and_empty_means_none(tmp_path: Path) -> None:
    with pytest.raises(ValidationError, match="at least 32 characters"):
        Settings(data_dir=tmp_path, admin_token="x" * 31)
    assert Settings(data_dir=tmp_path, admin_token="x" * 32).admin_token is not None
    assert Settings(data_dir=tmp_path, admin_token="").admin_token is None


def test_trusted_proxies_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for raw, expected in (
        ("10.0.0.1, 10.1.0.0/16", ["10.0.0.1", "10.1.0.0/16"]),
        ('["::1", "127.0.0.1"]', ["::1", "127.0.0.1"]),
        ("", []),
    ):
        monkeypatch.setenv("MODELPORT_SERVER__TRUSTED_PROXIES", raw)
        assert Settings(data_dir=tmp_path).server.trusted_proxies == expected
    monkeypatch.setenv("MODELPORT_SERVER__TRUSTED_PROXIES", "10.0.0.1, proxy.example")
    with pytest.raises(ValidationError, match=r"'proxy\.example' is not an IP address or CIDR network"):
        Settings(data_dir=tmp_path)


def test_public_text_url(tmp_path: Path) -> None:
    assert Settings(data_dir=tmp_path, text_port=9).effective_public_text_url == "http://127.0.0.1:9"
    media = Settings(data_dir=tmp_path, text_port=9, public_media_url="https://m.example/")
    assert media.effective_public_text_url == "https://m.example:9"
    own = Settings(data_dir=tmp_path, public_text_url="https://llm.example/", public_media_url="https://m.example")
    assert own.effective_public_text_url == "https://llm.example"
    with pytest.raises(ValidationError):
        Settings(data_dir=tmp_path, public_text_url="llm.example")
