"""compose.yaml, the Dockerfile and docs/deploy.md name only settings the code reads, with valid values,
and run only commands and options the CLI has."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from modelport.process.cli import main
from modelport.settings import Settings
from tests.support.setting_names import is_setting as _is_setting

ROOT = Path(__file__).resolve().parents[3]
# Environment names the code reads outside the settings object.
NOT_SETTINGS = {"MODELPORT_CONFIG", "MODELPORT_VENDORA_API_KEY"}


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "compose.yaml").read_text())
    return loaded


def _compose_env() -> dict[str, str]:
    env: dict[str, str] = {}
    compose = _compose()
    sources = [compose["x-modelport-env"]] + [s.get("environment") or {} for s in compose["services"].values()]
    for source in sources:
        for key, value in source.items():
            if key.startswith("MODELPORT_"):
                env[key] = str(value)
    return env


def test_the_settings_check_can_fail() -> None:
    assert _is_setting("MODELPORT_FILES__S3_BUCKET") and _is_setting("MODELPORT_SECRET_KEY")
    assert not _is_setting("MODELPORT_FILES__S3_BUKET")
    assert not _is_setting("MODELPORT_SECRET_KEY__X")


def test_compose_names_only_real_settings_with_valid_values(monkeypatch: pytest.MonkeyPatch) -> None:
    env = _compose_env()
    assert {"MODELPORT_DATABASE_URL", "MODELPORT_REDIS_URL", "MODELPORT_SECRET_KEY"} <= set(env)
    unknown = sorted(k for k in env if not _is_setting(k))
    assert not unknown, f"compose.yaml sets names the code does not read: {unknown}"
    # The values load: ${VAR:-default} takes its default, ${VAR:?...} a stand-in.
    for key, value in env.items():
        value = re.sub(r"\$\{[A-Z_]+:-([^}]*)\}", r"\1", value)
        value = re.sub(r"\$\{[A-Z_]+:\?[^}]*\}", "stand-in-secret-value-0123456789", value)
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("MODELPORT_CONFIG", raising=False)
    settings = Settings()
    assert settings.files.backend == "s3" and settings.database_url is not None
    assert settings.database_url.startswith("postgresql+asyncpg://")


def test_compose_runs_the_topology_with_real_commands() -> None:
    services = _compose()["services"]
    roles = [s.get("command", ["serve"]) for s in services.values() if s.get("image", "").startswith("modelport")]
    assert sum(1 for c in roles if c[0] == "serve" and "--no-workers" in c) == 2
    assert sum(1 for c in roles if c == ["worker"]) == 2
    assert ["migrate"] in roles
    assert {"postgres", "redis", "minio"} <= set(services)
    for command in roles:
        sub = main.get_command(click.Context(main), command[0])
        assert sub is not None, command
        sub.make_context(command[0], list(command[1:]))  # unknown options raise


def test_dockerfile_env_and_entrypoint() -> None:
    text = (ROOT / "Dockerfile").read_text()
    names = set(re.findall(r"\b(MODELPORT_[A-Z0-9_]+)=", text))
    assert names and all(_is_setting(n) for n in names), names
    assert 'ENTRYPOINT ["modelport"]' in text


@pytest.mark.parametrize(
    "doc",
    [
        "docs/deploy.md",
        "docs/api/operations.md",
        "docs/configuration.md",
        "docs/security.md",
        "docs/api/console.md",
        "docs/alerts/README.md",
        "docs/api/operator-alerts.md",
        "docs/architecture.md",
        "docs/deploy/sso.md",
        *sorted(str(p.relative_to(ROOT)) for p in (ROOT / "docs/architecture").glob("*.md")),
    ],
)
def test_docs_name_only_real_settings(doc: str) -> None:
    names = set(re.findall(r"\b(MODELPORT_[A-Z0-9_]*[A-Z0-9])\b", (ROOT / doc).read_text()))
    # A doc may name a group (`MODELPORT_SERVER__*`, `MODELPORT_CREDIT__LEASE_SECONDS`).
    unknown = sorted(
        n for n in names if n not in NOT_SETTINGS and not n.startswith("MODELPORT_TEST_") and not _is_setting(n)
    )
    assert not unknown, f"{doc} names settings the code does not read: {unknown}"


def test_deploy_doc_lists_what_must_agree() -> None:
    text = (ROOT / "docs/deploy.md").read_text()
    agree = text.split("## Settings that must agree", 1)[1].split("\n## ", 1)[0]
    for name in ("MODELPORT_SECRET_KEY", "MODELPORT_PUBLIC_MEDIA_URL", "MODELPORT_DATABASE_URL", "MODELPORT_REDIS_URL"):
        assert name in agree
    assert "S3_BUCKET" in agree and "S3_ENDPOINT_URL" in agree
