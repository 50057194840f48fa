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
# The most output tokens any text model may declare, and so the largest output cap (`max_tokens`,
# `max_completion_tokens`, `max_output_tokens`) a client may ask for: a 32-bit integer, which every upstream
# parses (llama.cpp's `n_predict` is one) and every answer can echo. A larger cap is a 400 naming its field.
OUTPUT_TOKENS_CEILING = 2**31 - 1
# The spec's five model types; other types (speech) are listed only when a client asks for them by type.
LISTED_BY_DEFAULT: frozenset[str] = frozenset(
    {"text-to-image", "image-to-image", "text-to-video", "image-to-video", "video-to-video"}
)


class RateTable(BaseModel):
    """Rates of a long-context or service-tier price table, USD per million tokens; a rate it leaves out
    is the enclosing table's (how `billing.rates` resolves them, cache rates included)."""

    model_config = ConfigDict(extra="forbid")

    input: Decimal | None = Field(default=None, ge=0)
    output: Decimal | None = Field(default=None, ge=0)
    cache_read: Decimal | None = Field(default=None, ge=0)
    cache_write: Decimal | None = Field(default=None, ge=0)  # 5-minute cache writes
    cache_write_1h: Decimal | None = Field(default=None, ge=0)


class LongContextRates(RateTable):
    """Rates for a whole request whose total input (cache reads and writes included) is above the threshold."""

    above_input_tokens: int = Field(default=200_000, gt=0)


class TierRates(RateTable):
    """Rates of a service tier the upstream reports (`service_tier`), with its own long-context table."""

    long_context: LongContextRates | None = None


class ServiceTiers(BaseModel):
    model_config = ConfigDict(extra="forbid")

    priority: TierRates | None = None
    flex: TierRates | None = None


class Prices(BaseModel):
    """USD per million tokens. A cache rate left out is derived (`billing.rates`): from the input rate by
    Anthropic's multipliers on `anthropic` deployments, else the input rate."""

    model_config = ConfigDict(extra="forbid")

    input: Decimal = Field(default=Decimal(0), ge=0)
    output: Decimal = Field(default=Decimal(0), ge=0)
    cache_read: Decimal | None = Field(default=None, ge=0)
    cache_write: Decimal | None = Field(default=None, ge=0)  # 5-minute cache writes
    cache_write_1h: Decimal | None = Field(default=None, ge=0)
    long_context: LongContextRates | None = None
    service_tiers: ServiceTiers | None = None


class Deployment(BaseModel):
    """One upstream that can serve a text model."""

    model_config = ConfigDict(extra="forbid")

    name: str | None = None
    kind: UpstreamKind
    base_url: str | None = None
    # Name of the environment variable holding the upstream key (the key itself never sits in the catalog).
    api_key_env: str | None = None
    model: str
    # The longest wait for any read from the upstream (`stream_idle_timeout_seconds` overrides it once relaying).
    timeout_seconds: float = Field(default=600.0, gt=0)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)
    # From sending the request to the first content event of a stream, or the whole answer when not
    # streamed; past it the next deployment is tried (unset: only `timeout_seconds` bounds it).
    first_byte_timeout_seconds: float | None = Field(default=None, gt=0)
    # Between two reads of a stream (unset: `timeout_seconds`).
    stream_idle_timeout_seconds: float | None = Field(default=None, gt=0)
    headers: dict[str, str] = Field(default_factory=dict)
    # How often the rotation starts at this deployment relative to the model's others (0: only when the
    # others fail or cool down; session affinity ignores it).
    weight: int = Field(default=1, ge=0, le=1000)
    # While cooling down, call the upstream's free model list with the deployment's key every
    # `probe_seconds`: a success brings it back without waiting for user traffic (docs/api/routing.md).
    probe: Literal["models"] | None = None
    probe_seconds: float = Field(default=10.0, gt=0)

    @property
    def read_timeout_seconds(self) -> float:
        return self.stream_idle_timeout_seconds or self.timeout_seconds

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
    # The most output tokens the model can produce (shown in model lists; the balance hold assumes it when the
    # client sets no cap). None: the upstream kind's default (its protocol package's
    # `UpstreamKindSpec.default_max_output`).
    max_output_tokens: int | None = Field(default=None, gt=0, le=OUTPUT_TOKENS_CEILING)
    # No longer used (the gateway sends no cap the client did not ask for; docs/api/text-gateway.md,
    # Billing): still accepted so older catalog files load; a file import warns about it.
    default_max_output_tokens: int | None = Field(default=None, gt=0)
    prices: Prices = Field(default_factory=Prices)
    deployments: list[Deployment] = Field(min_length=1)
    active: bool = True
    # Teams allowed to use the model; empty means every team.
    teams: list[str] = Field(default_factory=list)
    # Models tried in order when every deployment of this one failed or is cooling down (a model the key or
    # team may not use is skipped; docs/api/routing.md).
    fallbacks: list[str] = Field(default_factory=list)
    # Models tried instead for a request over `context_window` (estimated, or the upstream's
    # `context_length_exceeded`).
    context_fallbacks: list[str] = Field(default_factory=list)

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


HostedProviderKind = Literal["openai_images", "openai_image_edits", "openai_speech", "submit_poll"]


class HostedProvider(BaseModel):
    """A hosted media provider that runs a media model's tasks (docs/api/media-upstreams.md).

    `openai_images` (POST /v1/images/generations), `openai_image_edits` (POST /v1/images/edits, multipart)
    and `openai_speech` (POST /v1/audio/speech) are one synchronous call each; `submit_poll` submits the
    task, polls a status URL with backoff until a terminal status, then downloads the output URLs.
    Paths into JSON answers are JMESPath expressions (`id`, `data.id`, `output`, `images[*].url`).
    """

    model_config = ConfigDict(extra="forbid")

    kind: HostedProviderKind
    # The provider's name: the key of its concurrency limit (shared by every model naming it) and in logs.
    name: str = Field(min_length=1, max_length=64)
    base_url: str
    # Name of the environment variable holding the provider key (never the key itself).
    api_key_env: str | None = None
    # `Authorization: <auth_scheme> <key>` (fal.ai uses `Key`); empty: the key is sent as is.
    auth_scheme: str = "Bearer"
    headers: dict[str, str] = Field(default_factory=dict)
    # The provider's model name, sent as `model` by the OpenAI kinds.
    model: str | None = None
    # Tasks of this provider running at once across every worker process (database slots).
    max_concurrency: int = Field(default=4, ge=1, le=1000)
    # One HTTP call (a synchronous generation included) may take this long.
    timeout_seconds: float = Field(default=300.0, gt=0)
    # Input fields holding media URLs: checked at creation like the embedded models' (400 naming the field).
    url_fields: list[str] = Field(default_factory=list)
    # Input fields whose `asset://<asset_id>` (an active asset of the team, else 400) is replaced by the
    # provider's own reference, `asset_ref_format` with `{upstream_id}` (the asset library's id of it).
    asset_fields: list[str] = Field(default_factory=list)
    asset_ref_format: str = "asset://{upstream_id}"
    # Default voice of `openai_speech` when the input names none.
    voice: str | None = None
    # submit_poll: POST base_url + submit_path with the input (under `input_field` if set) plus `extra_body`.
    submit_path: str = ""
    input_field: str | None = None
    extra_body: dict[str, Any] = Field(default_factory=dict)
    id_path: str = "id"
    # GET base_url + status_path (`{id}` replaced), or an absolute URL template.
    status_path: str = "/{id}"
    status_field: str = "status"
    success_values: list[str] = Field(default_factory=lambda: ["succeeded", "completed", "COMPLETED"])
    failure_values: list[str] = Field(default_factory=lambda: ["failed", "canceled", "cancelled", "FAILED"])
    # After success, GET this (`{id}` replaced) for the outputs; None: they are in the status answer.
    result_path: str | None = None
    output_path: str = "output"
    error_path: str | None = "error"
    poll_initial_seconds: float = Field(default=1.0, gt=0)
    poll_max_seconds: float = Field(default=10.0, gt=0)
    # submit_poll: where the status answer reports progress (0-100, or a 0-1 fraction); None: it does not.
    progress_path: str | None = None
    # submit_poll: POST this (`{id}` replaced) to cancel a job when its task is cancelled or passes its
    # deadline; None: the provider has no cancel call (the job is abandoned).
    cancel_path: str | None = None

    @field_validator("base_url")
    @classmethod
    def _strip(cls, value: str) -> str:
        return value.rstrip("/")


class MediaModel(BaseModel):
    model_config = ConfigDict(extra="forbid")

    slug: str
    type: MediaType
    description: str
    # Absolute URI, or a path that is made absolute against the media host's public URL.
    docs_url: str
    active: bool = True
    published: bool = True
    # The embedded implementation that runs its tasks (`media.tasks.models`), or the hosted provider that
    # does (`upstream`); with neither, no task can run.
    runner: str | None = None
    upstream: HostedProvider | None = None
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
