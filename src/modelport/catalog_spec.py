"""The model catalog's entry types: text models with prices and upstream deployments, and media models."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

SLUG_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.:-]*$")

UpstreamKind = Literal["openai_chat", "openai_responses", "anthropic", "openai_compatible", "local"]
MediaType = Literal[
    "text-to-image", "image-to-image", "text-to-video", "image-to-video", "video-to-video", "text-to-speech"
]
# The spec's five model types; other types (speech) are listed only when a client asks for them by type.
LISTED_BY_DEFAULT: frozenset[str] = frozenset(
    {"text-to-image", "image-to-image", "text-to-video", "image-to-video", "video-to-video"}
)


class Prices(BaseModel):
    """USD per million tokens."""

    model_config = ConfigDict(extra="forbid")

    input: Decimal = Field(default=Decimal(0), ge=0)
    output: Decimal = Field(default=Decimal(0), ge=0)
    cache_read: Decimal | None = Field(default=None, ge=0)
    cache_write: Decimal | None = Field(default=None, ge=0)


class Deployment(BaseModel):
    """One upstream that can serve a text model."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    kind: UpstreamKind
    base_url: str | None = None
    # Name of the environment variable holding the upstream key (the key itself never sits in the catalog).
    api_key_env: str | None = None
    model: str
    timeout_seconds: float = Field(default=600.0, gt=0)
    headers: dict[str, str] = Field(default_factory=dict)

    @field_validator("base_url")
    @classmethod
    def _strip(cls, value: str | None) -> str | None:
        return value.rstrip("/") if value else value


class TextModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str
    display_name: str | None = None
    created_at: int = 1_735_689_600  # 2025-01-01, for model lists that want a date
    context_window: int | None = Field(default=None, gt=0)
    # The most output tokens the model can produce (shown in model lists); None when unknown.
    max_output_tokens: int | None = Field(default=None, gt=0)
    default_max_output_tokens: int = Field(default=4096, gt=0)
    prices: Prices = Field(default_factory=Prices)
    deployments: list[Deployment] = Field(min_length=1)
    active: bool = True
    # Teams allowed to use the model; empty means every team.
    teams: list[str] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _check_id(cls, value: str) -> str:
        if not SLUG_RE.match(value):
            raise ValueError("model id must be <provider>/<name>")
        return value

    @property
    def provider(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def name(self) -> str:
        return self.id.split("/", 1)[1]


class MediaModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slug: str
    type: MediaType
    description: str
    # Absolute URI, or a path that is made absolute against the media host's public URL.
    docs_url: str
    active: bool = True
    published: bool = True
    # The embedded implementation that runs its tasks (`media.tasks.models`); None: no task can run.
    runner: str | None = None
    # USD per output unit (`price_unit`): the price frozen at creation is this times the units asked for.
    price_usd: Decimal = Field(default=Decimal(0), ge=0, le=Decimal(1000))
    # `1k_characters`: per 1,000 characters of text, counted exactly (1,500 characters cost 1.5 times the price).
    price_unit: Literal["image", "second", "task", "1k_characters"] = "task"
    # JSON Schema of the request body (draft 2020-12); None accepts any JSON object.
    input_schema: dict[str, Any] | None = None
    # A task not ended this long after creation fails and is refunded.
    deadline_seconds: float = Field(default=600.0, gt=0, le=7 * 24 * 3600)

    @field_validator("slug")
    @classmethod
    def _check_slug(cls, value: str) -> str:
        if not SLUG_RE.match(value):
            raise ValueError("media model slug must be <provider>/<model_id>")
        return value


class CatalogFile(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text_models: list[TextModel] = Field(default_factory=list)
    media_models: list[MediaModel] = Field(default_factory=list)
