"""The one typed settings object, read once at start-up.

Sources, highest precedence first: explicit keyword arguments, `MODELPORT_*` environment variables
(nested fields with `__`, e.g. `MODELPORT_FILES__MAX_UPLOAD_BYTES`), the TOML file named by
`MODELPORT_CONFIG`, then the defaults below. Secrets are `SecretStr` so they never reach a log.
"""

from __future__ import annotations

import os
from decimal import Decimal
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from modelport.media.files.config import FilesSettings


class TierSettings(BaseModel):
    """One rung of the tier ladder. A single top-up of at least `qualifying_topup_usd` moves a team here."""

    name: str
    qualifying_topup_usd: Decimal = Field(ge=0)
    inference_rpm: int = Field(gt=0)
    query_rpm: int = Field(gt=0)
    concurrent_media_tasks: int = Field(gt=0)
    concurrent_requests: int = Field(default=64, gt=0)


def default_tiers() -> list[TierSettings]:
    return [
        TierSettings(name="free", qualifying_topup_usd=Decimal(0), inference_rpm=60, query_rpm=120,
                     concurrent_media_tasks=2, concurrent_requests=16),
        TierSettings(name="tier1", qualifying_topup_usd=Decimal(10), inference_rpm=300, query_rpm=600,
                     concurrent_media_tasks=5, concurrent_requests=64),
        TierSettings(name="tier2", qualifying_topup_usd=Decimal(100), inference_rpm=1000, query_rpm=2000,
                     concurrent_media_tasks=10, concurrent_requests=256),
        TierSettings(name="tier3", qualifying_topup_usd=Decimal(1000), inference_rpm=5000, query_rpm=10000,
                     concurrent_media_tasks=50, concurrent_requests=1024),
    ]


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="MODELPORT_",
        env_nested_delimiter="__",
        extra="forbid",
        validate_default=True,
    )

    data_dir: Path = Path("./var")
    database_url: str | None = None
    redis_url: str | None = None
    host: str = "127.0.0.1"
    media_port: int = Field(default=8080, ge=0, le=65535)
    text_port: int = Field(default=8081, ge=0, le=65535)
    public_media_url: str | None = None
    catalog: Path | None = None
    admin_token: SecretStr | None = None
    # HMAC key for signed download URLs and webhook signatures; generated into data_dir when unset.
    secret_key: SecretStr | None = None
    # How long a resolved API key stays cached in a process; revocation takes effect within this bound.
    auth_cache_seconds: float = Field(default=5.0, ge=0)
    # Key prefix of rate-limit state in Redis; processes that share limits use the same prefix.
    ratelimit_prefix: str = "modelport"
    # Cap of each retained request/response payload in the request log (teams with log_retention on).
    log_payload_max_bytes: int = Field(default=64 * 1024, ge=256)
    demo_team: str = "demo"
    demo_balance_usd: Decimal = Field(default=Decimal(5), ge=0)
    log_level: str = "INFO"
    log_json: bool = True
    tiers: list[TierSettings] = Field(default_factory=default_tiers)
    files: FilesSettings = Field(default_factory=FilesSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        sources: list[PydanticBaseSettingsSource] = [init_settings, env_settings]
        config_file = os.environ.get("MODELPORT_CONFIG")
        if config_file:
            path = Path(config_file)
            if not path.is_file():
                raise ValueError(f"MODELPORT_CONFIG points to {config_file!r}, which is not a file")
            sources.append(TomlConfigSettingsSource(settings_cls, toml_file=path))
        return tuple(sources)

    @field_validator("database_url")
    @classmethod
    def _check_database_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("sqlite+aiosqlite://", "postgresql+asyncpg://")):
            raise ValueError("must start with sqlite+aiosqlite:// or postgresql+asyncpg://")
        return value

    @field_validator("public_media_url")
    @classmethod
    def _check_public_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @model_validator(mode="after")
    def _check_tiers(self) -> Settings:
        if not self.tiers:
            raise ValueError("tiers: at least one tier is needed")
        names = [t.name for t in self.tiers]
        if len(set(names)) != len(names):
            raise ValueError("tiers: names must be unique")
        self.tiers = sorted(self.tiers, key=lambda t: t.qualifying_topup_usd)
        if self.tiers[0].qualifying_topup_usd != 0:
            raise ValueError("tiers: the lowest tier must qualify at 0 USD (it is the starting tier)")
        return self

    @property
    def effective_database_url(self) -> str:
        if self.database_url:
            return self.database_url
        return f"sqlite+aiosqlite:///{(self.data_dir / 'modelport.db').resolve()}"

    @property
    def is_sqlite(self) -> bool:
        return self.effective_database_url.startswith("sqlite")

    @property
    def effective_public_media_url(self) -> str:
        return self.public_media_url or f"http://{self.host}:{self.media_port}"

    def tier(self, name: str) -> TierSettings:
        for tier in self.tiers:
            if tier.name == name:
                return tier
        return self.tiers[0]

    def safe_summary(self) -> dict[str, Any]:
        """What start-up may log: no secrets, no credentials inside URLs."""
        return {
            "data_dir": str(self.data_dir),
            "database": "sqlite" if self.is_sqlite else "postgresql",
            "redis": bool(self.redis_url),
            "media_port": self.media_port,
            "text_port": self.text_port,
            "public_media_url": self.effective_public_media_url,
            "admin_api": self.admin_token is not None,
            "files_backend": self.files.backend,
        }


def load_settings(**overrides: Any) -> Settings:
    """Read and validate the settings; raises pydantic.ValidationError with field-level messages."""
    return Settings(**overrides)
