"""The one typed settings object, read once at start-up.

Sources, highest precedence first: explicit keyword arguments, `MODELPORT_*` environment variables
(nested fields with `__`, e.g. `MODELPORT_FILES__MAX_UPLOAD_BYTES`), the TOML file named by
`MODELPORT_CONFIG`, then the defaults below. Secrets are `SecretStr` so they never reach a log.
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
from decimal import Decimal
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import (
    BaseSettings,
    NoDecode,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

MIN_ADMIN_TOKEN_LENGTH = 32
SCIM_TOKEN_MIN = 32  # as the admin token: a bearer secret an identity provider holds


class FilesSettings(BaseModel):
    """The media file store (nested as `settings.files`, env prefix `MODELPORT_FILES__`)."""

    backend: Literal["local", "s3"] = "local"
    # Local backend root; default `<data_dir>/media`.
    local_dir: Path | None = None
    # Upload limit in bytes; 16 MB as the spec's default.
    max_upload_bytes: int = Field(default=16 * 1024 * 1024, gt=0)
    retention_seconds: int = Field(default=7 * 24 * 3600, gt=0)
    # Per-team quota over the team's non-expired files.
    quota_bytes: int = Field(default=1024 * 1024 * 1024, gt=0)
    quota_files: int = Field(default=1000, gt=0)
    sweep_interval_seconds: float = Field(default=300.0, gt=0)
    # Rows removed per sweeper statement; keeps each transaction short.
    sweep_batch: int = Field(default=200, gt=0, le=10_000)
    # S3-compatible object storage (backend = "s3").
    s3_bucket: str = "modelport-media"
    s3_endpoint_url: str | None = None
    s3_region: str = "us-east-1"
    s3_access_key_id: str | None = None
    s3_secret_access_key: SecretStr | None = None
    s3_prefix: str = "files/"
    # "path" for most self-hosted servers (MinIO, Ceph); "auto" lets botocore choose.
    s3_addressing_style: Literal["auto", "path", "virtual"] = "auto"
    # Multipart part size: the most upload bytes one request holds in memory (S3 minimum 5 MiB).
    s3_part_size: int = Field(default=8 * 1024 * 1024, ge=5 * 1024 * 1024)


class ServerSettings(BaseModel):
    """Connection limits of `modelport serve` (nested as `settings.server`, env prefix `MODELPORT_SERVER__`)."""

    # The request line plus all headers; more is 431.
    max_header_bytes: int = Field(default=32 * 1024, ge=1024, le=1024 * 1024)
    # From accepting a connection (or a request's first byte) to the end of its headers; then 408.
    header_timeout_seconds: float = Field(default=10.0, gt=0)
    # The longest pause between two reads of a request body; then 408.
    body_timeout_seconds: float = Field(default=30.0, gt=0)
    # An idle keep-alive connection is closed after this.
    keep_alive_seconds: float = Field(default=15.0, gt=0)
    # Open connections per process (both hosts together); also held below the open-file limit.
    max_connections: int = Field(default=10_000, ge=1)
    # SIGTERM: in-flight requests get this long to finish; streams still running then are ended with
    # the protocol's error event, billed for what they produced and logged as cut by shutdown.
    graceful_shutdown_seconds: float = Field(default=30.0, ge=0)
    # SIGTERM: for this long first, /readyz answers 503 while everything else is still served, so a load
    # balancer stops routing here before the listening sockets close (set it above its probe interval).
    drain_seconds: float = Field(default=0.0, ge=0)
    # Addresses or CIDR networks of the reverse proxies in front of the service (default: none). Only a
    # connection from one of them has its `X-Forwarded-For` / `X-Forwarded-Proto` honoured; everything
    # that needs the client's address (sign-in and admin-token limits, per-key IP rules) reads it then.
    trusted_proxies: Annotated[list[str], NoDecode] = Field(default_factory=list)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _split_proxies(cls, value: Any) -> Any:
        # From the environment: `10.0.0.1, 10.1.0.0/16` or a JSON list; from TOML: a list.
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                return json.loads(value)
            return [p.strip() for p in value.split(",") if p.strip()]
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _check_proxies(cls, value: list[str]) -> list[str]:
        for entry in value:
            try:
                ipaddress.ip_network(entry, strict=False)
            except ValueError:
                raise ValueError(f"{entry!r} is not an IP address or CIDR network") from None
        return value


class CreditSettings(BaseModel):
    """Credit reservations of the text gateway (`settings.credit`, env prefix `MODELPORT_CREDIT__`)."""

    # A process renews its reservations' lease every third of this; a reservation whose lease ran out
    # (its process died) is returned by the next sweep. Crash recovery takes at most lease + sweep interval.
    lease_seconds: float = Field(default=30.0, gt=0)
    # How often every process sweeps reservations with an expired lease.
    sweep_interval_seconds: float = Field(default=15.0, gt=0)
    # The unused part of a reservation goes back after this long without a request of its team.
    idle_return_seconds: float = Field(default=1.0, gt=0)
    # How long a request waits for other processes to return unused reservations when the team's available
    # balance is short but other processes hold some of its money; then 402.
    ask_back_wait_seconds: float = Field(default=2.0, ge=0)
    # A team whose credit cannot cover a model's maximum output gets its answer capped to what it covers, but
    # never below this many output tokens: below, the request is refused with 402 (docs/api/text-gateway.md, Billing).
    min_output_tokens: int = Field(default=1024, ge=1)


class AssetsSettings(BaseModel):
    """Provider assets (nested as `settings.assets`, env prefix `MODELPORT_ASSETS__`)."""

    # embedded: our own asset library (files in our store, moderation in-process); http: the vendorA API.
    backend: Literal["embedded", "http"] = "embedded"
    # vendorA asset API (backend = "http"): its base URL and the NAME of the environment variable that
    # holds its API key (the key itself never sits in settings files).
    base_url: str | None = None
    api_key_env: str = "MODELPORT_VENDORA_API_KEY"
    connect_timeout_seconds: float = Field(default=5.0, gt=0)
    # One attempt of an upstream call (uploads of 200 MB included).
    request_timeout_seconds: float = Field(default=120.0, gt=0)
    # Extra attempts after a connection error, a timeout or a 5xx (POSTs carry an Idempotency-Key).
    retries: int = Field(default=2, ge=0, le=10)
    retry_backoff_seconds: float = Field(default=0.5, ge=0)
    # Consecutive failed calls that open the circuit, and how long it stays open before one trial call.
    breaker_failures: int = Field(default=5, ge=1)
    breaker_open_seconds: float = Field(default=30.0, gt=0)
    # http backend: how often `processing` assets are refreshed from vendorA in the background.
    poll_interval_seconds: float = Field(default=5.0, gt=0)
    # Downloading the user's URL (all redirects included).
    fetch_time_limit_seconds: float = Field(default=120.0, gt=0)
    # Embedded library: moderation passes at once per process (each decodes a whole file in a thread).
    moderation_concurrency: int = Field(default=2, ge=1, le=32)
    # Reading a file's headers at registration, and one full-decode moderation pass: past these the
    # registration is refused (400) / the asset fails, rather than a request or a slot hanging on it.
    probe_time_limit_seconds: float = Field(default=30.0, gt=0)
    moderation_time_limit_seconds: float = Field(default=600.0, gt=0)


class NetSettings(BaseModel):
    """The SSRF-safe fetcher (nested as `settings.net`, env prefix `MODELPORT_NET__`)."""

    # Comma-separated `host:port` entries (or a TOML list) that skip the global-address check and may use
    # plain http. Matched on the URL's literal host string and port, never on a resolved address.
    allow_hosts: str | list[str] = ""
    # An extra CA file (PEM) trusted for https fetches besides the system store.
    ca_bundle: Path | None = None
    # Cap of one server-side fetch (all redirects included) when the caller names none.
    default_timeout_seconds: float = Field(default=60.0, gt=0)
    connect_timeout_seconds: float = Field(default=10.0, gt=0)

    @field_validator("allow_hosts")
    @classmethod
    def _check_allow_hosts(cls, value: str | list[str]) -> list[str]:
        entries = value.split(",") if isinstance(value, str) else value
        out: list[str] = []
        for raw in entries:
            entry = raw.strip().lower()
            if not entry:
                continue
            host, sep, port = entry.rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"{raw.strip()!r} must be host:port (e.g. localhost:8443)")
            out.append(f"{host}:{int(port)}")
        return out

    @field_validator("ca_bundle")
    @classmethod
    def _check_ca_bundle(cls, value: Path | None) -> Path | None:
        if value is not None and not value.is_file():
            raise ValueError(f"{str(value)!r} is not a file")
        return value

    def allowed_pairs(self) -> frozenset[str]:
        hosts = self.allow_hosts
        return frozenset(hosts if isinstance(hosts, list) else [])


class TasksSettings(BaseModel):
    """Media tasks (nested as `settings.tasks`, env prefix `MODELPORT_TASKS__`)."""

    # `serve` runs the task workers, reconciler and webhook sender in-process; false leaves the work to
    # `modelport worker` processes (`serve --no-workers` sets it).
    run_workers: bool = True
    # Tasks one worker process runs at once (each renders in a thread of the render pool).
    worker_concurrency: int = Field(default=2, ge=1, le=64)
    # Threads of the process's render process: embedded models' renders (image, video, speech) run there,
    # off the serving process, so both hosts keep answering while a video renders. More renders than this wait.
    render_threads: int = Field(default=2, ge=1, le=64)
    # The render process exits after idling this long, returning the memory renders leave behind (hundreds
    # of MB); the next render starts a new one (about a second more before it starts rendering).
    render_idle_seconds: float = Field(default=60.0, gt=0)
    # A running task's lease; the worker renews it every third of it. Past it, another worker takes over.
    lease_seconds: float = Field(default=30.0, ge=1)
    # How often the reconciler looks for tasks to re-queue, take over or time out.
    reconcile_interval_seconds: float = Field(default=2.0, gt=0)
    # ...and, at most this often, for keys expiring within their team's `key_expiry_days` (`key.expiring`).
    key_expiry_check_seconds: float = Field(default=60.0, gt=0)
    # A queued task older than this is queued again (idempotent: the task id is the job key).
    requeue_after_seconds: float = Field(default=10.0, ge=0)
    # Runs a task may start (takeovers after crashes included) before it fails and is refunded.
    max_attempts: int = Field(default=3, ge=1, le=20)
    # How long result files (and their download URLs) live; also the most `X-Result-Retention` may ask.
    result_retention_seconds: int = Field(default=7 * 24 * 3600, gt=0)
    # A running task's progress is written to its row at most this often (and a cancel or deadline is
    # noticed by the process running it within about this long).
    progress_interval_seconds: float = Field(default=0.5, gt=0, le=10)
    # `task.progress` webhooks: at most one per task per this many seconds.
    progress_webhook_seconds: float = Field(default=2.0, gt=0)
    # The live status stream (`GET /api/v1/tasks/{id}/events`): a comment line this often keeps it open...
    events_keepalive_seconds: float = Field(default=15.0, gt=0)
    # ...and, where no notification reaches this process (no PostgreSQL, no Redis), the row is read this often.
    events_poll_seconds: float = Field(default=0.5, gt=0, le=1)
    # Live status streams and `Prefer: wait` creations one team may hold open at once, per serving process
    # (each holds a connection; past it, 429).
    max_streams_per_team: int = Field(default=20, ge=1)
    # How long an `Idempotency-Key` (task creation, asset registration, file upload) is remembered.
    idempotency_key_seconds: int = Field(default=24 * 3600, ge=1)


def standard_schedule() -> list[float]:
    """Standard Webhooks' retry schedule: immediately, 5 s, 5 min, 30 min, 2 h, 5 h, 10 h, 10 h."""
    return [0, 5, 300, 1800, 7200, 18000, 36000, 36000]


class WebhookSettings(BaseModel):
    """Task webhooks (nested as `settings.webhooks`, env prefix `MODELPORT_WEBHOOKS__`)."""

    # Delay before each attempt (the first is the delivery itself); its length is the number of attempts.
    schedule_seconds: list[float] = Field(default_factory=standard_schedule, min_length=1)
    # Each delay is spread by up to this fraction either way (so retries of many receivers do not align).
    jitter_fraction: float = Field(default=0.2, ge=0, le=1)
    # Only a 2xx answer within this time counts as delivered.
    timeout_seconds: float = Field(default=15.0, gt=0, le=60)
    # A sender holds a delivery this long; after a crash another sender takes it over.
    claim_seconds: float = Field(default=60.0, gt=0)
    # How often senders look for due deliveries (a local terminal transition also wakes them).
    poll_interval_seconds: float = Field(default=1.0, gt=0)
    # Deliveries in flight at once per process.
    concurrency: int = Field(default=8, ge=1, le=256)
    # Of those, at most this many for one team, so a slow receiver cannot hold the other teams' slots.
    per_team_concurrency: int = Field(default=2, ge=1, le=256)
    # The longest `Retry-After` honoured on a 429.
    max_retry_after_seconds: float = Field(default=36000, gt=0)
    # After a rotation, the previous secret keeps signing (as a second signature) this long.
    previous_secret_seconds: int = Field(default=24 * 3600, ge=0)


class ConsoleSettings(BaseModel):
    """The web console at `/console/` on the media host (`settings.console`, env prefix `MODELPORT_CONSOLE__`)."""

    # A session ends after this long without a page load (each response renews the signed cookie)...
    session_idle_seconds: int = Field(default=8 * 3600, ge=1)
    # ...and this long after sign-in in any case.
    session_max_seconds: int = Field(default=7 * 24 * 3600, ge=1)
    # Failed team sign-ins per client address per minute, and per key prefix tried; past either, a wrong
    # key gets 429 (a correct key is always accepted). Shared through Redis when it is configured.
    sign_in_per_minute: int = Field(default=10, ge=1)
    # Body caps of the console's forms (only application/x-www-form-urlencoded is accepted), checked
    # before anything is parsed: the sign-in forms, and every other form (the catalog editor's is largest).
    sign_in_form_max_bytes: int = Field(default=4 * 1024, ge=256)
    form_max_bytes: int = Field(default=64 * 1024, ge=1024)
    # The cookie's Secure flag; unset: on when the public media URL is https.
    secure_cookie: bool | None = None
    # Signing in with a team API key (beside email and password); false: people only.
    key_sign_in: bool = True


class AccountsSettings(BaseModel):
    """Console accounts (`settings.accounts`, env prefix `MODELPORT_ACCOUNTS__`; docs/api/accounts.md)."""

    # Invitation links live this long; setup and password-reset links this long.
    invite_seconds: int = Field(default=7 * 24 * 3600, ge=1)
    setup_seconds: int = Field(default=24 * 3600, ge=1)
    # Failed sign-ins per account and per client address in `sign_in_window_seconds`; past either, a wrong
    # attempt gets 429 with Retry-After (a correct one is always accepted). Shared through Redis when set.
    sign_in_failures: int = Field(default=10, ge=1)
    sign_in_window_seconds: int = Field(default=15 * 60, ge=1)


class SmtpSettings(BaseModel):
    """Mail for invitations and reset links (`settings.smtp`, env prefix `MODELPORT_SMTP__`); no host: none
    is sent (the links are still shown once)."""

    host: str | None = None
    port: int = Field(default=587, ge=1, le=65535)
    username: str | None = None
    # The name of the environment variable holding the password (never the password itself).
    password_env: str | None = None
    from_: str = Field(default="modelport@localhost", alias="from")
    starttls: bool = True
    timeout_seconds: float = Field(default=10.0, gt=0)

    model_config = {"populate_by_name": True}


class ScimSettings(BaseModel):
    """SCIM 2.0 provisioning at `/scim/v2/` (`settings.scim`, env prefix `MODELPORT_SCIM__`;
    docs/deploy/sso.md). `token_env` names the environment variable holding the identity provider's bearer
    token (never the token itself); unset: SCIM is off and every `/scim` path is a 404."""

    token_env: str | None = None
    # Wrong bearer tokens counted per client address (as `admin_failures_per_minute`): past this many a
    # minute a wrong one is a 429; the right token is never refused by the count.
    failures_per_minute: int = Field(default=10, ge=1)

    @model_validator(mode="after")
    def _check_token(self) -> ScimSettings:
        if self.token_env is not None:
            token = os.environ.get(self.token_env)
            if token is None:
                raise ValueError(f"MODELPORT_SCIM__TOKEN_ENV names {self.token_env}, which is not set")
            if len(token) < SCIM_TOKEN_MIN:
                raise ValueError(
                    f"the SCIM token in {self.token_env} has {len(token)} characters; at least {SCIM_TOKEN_MIN}"
                    " are needed (make one with: openssl rand -hex 32)"
                )
        return self

    def token(self) -> str | None:
        return None if self.token_env is None else os.environ.get(self.token_env)


OIDC_SCOPES_DEFAULT = "openid email profile"
_DOMAIN_RE = re.compile(r"^(\*\.)?[a-z0-9]([a-z0-9-]*[a-z0-9])?(\.[a-z0-9]([a-z0-9-]*[a-z0-9])?)+$")


class RoleMapping(BaseModel):
    """One grant of a group (`ROLE_MAPPINGS`): a team role in a team (by name or id), or an operator role."""

    model_config = {"extra": "forbid"}

    team: str | None = None
    role: Literal["owner", "admin", "developer", "viewer"] | None = None
    operator_role: Literal["operator", "operator_viewer"] | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> RoleMapping:
        team_grant = self.team is not None or self.role is not None
        if team_grant == (self.operator_role is not None):
            raise ValueError('each grant is {"team": ..., "role": ...} or {"operator_role": ...}')
        if team_grant and (not self.team or self.role is None):
            raise ValueError('a team grant needs both "team" (a name or id) and "role"')
        return self


class OidcSettings(BaseModel):
    """Single sign-on with an OpenID Connect provider (`settings.oidc`, env prefix `MODELPORT_OIDC__`;
    docs/deploy/sso.md). Unset `issuer`: no SSO. `client_secret_env` names the environment variable
    holding the client secret (never the secret itself); unset: a public client (PKCE only)."""

    issuer: str | None = None
    client_id: str | None = None
    client_secret_env: str | None = None
    scopes: str = OIDC_SCOPES_DEFAULT
    # The sign-in button's text: "Sign in with {display_name}".
    display_name: str = "single sign-on"
    # Exact domains (`example.com`) or every subdomain (`*.example.com`): who may be created by SSO and
    # whose password sign-in `require_sso` turns off. From the environment a comma-separated list.
    allowed_email_domains: Annotated[list[str], NoDecode] = Field(default_factory=list)
    # Create an unknown person at their first sign-in (their email in an allowed domain, verified).
    auto_create_users: bool = False
    # The ID token claim (or userinfo field) listing the person's groups: the keys of `role_mappings`.
    groups_claim: str = "groups"
    # {"group": [{"team": "acme", "role": "developer"}, {"operator_role": "operator"}]}; from the
    # environment a JSON object.
    role_mappings: Annotated[dict[str, list[RoleMapping]], NoDecode] = Field(default_factory=dict)
    # Password sign-in is refused for emails of the allowed domains (the admin token stays as break-glass).
    require_sso: bool = False

    @field_validator("allowed_email_domains", mode="before")
    @classmethod
    def _split_domains(cls, value: Any) -> Any:
        if isinstance(value, str):
            if value.lstrip().startswith("["):
                return json.loads(value)
            return [d.strip() for d in value.split(",") if d.strip()]
        return value

    @field_validator("role_mappings", mode="before")
    @classmethod
    def _parse_mappings(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                raise ValueError(
                    'MODELPORT_OIDC__ROLE_MAPPINGS must be a JSON object: {"group": [{"team": "acme", "role":'
                    ' "developer"}, {"operator_role": "operator"}]}'
                ) from None
        return value

    @field_validator("allowed_email_domains")
    @classmethod
    def _check_domains(cls, value: list[str]) -> list[str]:
        out = []
        for raw in value:
            domain = raw.strip().lower()
            if not _DOMAIN_RE.match(domain):
                raise ValueError(f"{raw!r} is not a domain (example.com, or *.example.com for its subdomains)")
            out.append(domain)
        return out

    @field_validator("issuer")
    @classmethod
    def _check_issuer(cls, value: str | None) -> str | None:
        if value is None or value == "":
            return None
        parts = urlsplit(value)
        if parts.scheme not in ("https", "http") or not parts.hostname or parts.query or parts.fragment:
            raise ValueError(
                "MODELPORT_OIDC__ISSUER must be the provider's issuer URL (https://..., as in its"
                " /.well-known/openid-configuration), without a query or fragment"
            )
        return value

    @model_validator(mode="after")
    def _check_complete(self) -> OidcSettings:
        if self.issuer is None:
            return self
        if not self.client_id:
            raise ValueError("MODELPORT_OIDC__ISSUER is set: MODELPORT_OIDC__CLIENT_ID is needed too")
        if self.client_secret_env is not None and not os.environ.get(self.client_secret_env):
            raise ValueError(f"MODELPORT_OIDC__CLIENT_SECRET_ENV names {self.client_secret_env}, which is not set")
        if "openid" not in self.scopes.split():
            raise ValueError("MODELPORT_OIDC__SCOPES must include openid")
        if self.auto_create_users and not self.allowed_email_domains:
            raise ValueError(
                "MODELPORT_OIDC__AUTO_CREATE_USERS needs MODELPORT_OIDC__ALLOWED_EMAIL_DOMAINS (who may be created)"
            )
        if self.require_sso and not self.allowed_email_domains:
            raise ValueError("MODELPORT_OIDC__REQUIRE_SSO needs MODELPORT_OIDC__ALLOWED_EMAIL_DOMAINS (whose sign-in)")
        if not self.groups_claim.strip():
            raise ValueError("MODELPORT_OIDC__GROUPS_CLAIM must not be empty")
        return self

    @property
    def enabled(self) -> bool:
        return self.issuer is not None

    def client_secret(self) -> str | None:
        return None if self.client_secret_env is None else os.environ.get(self.client_secret_env)

    def domain_allowed(self, email: str) -> bool:
        """Whether `email` is in an allowed domain: an exact match, or a subdomain of a `*.` entry."""
        domain = email.rpartition("@")[2].strip().lower()
        for allowed in self.allowed_email_domains:
            if allowed.startswith("*."):
                if domain.endswith(allowed[1:]):
                    return True
            elif domain == allowed:
                return True
        return False


class RetentionSettings(BaseModel):
    """How long rows are kept (`settings.retention`, env prefix `MODELPORT_RETENTION__`). Days accept
    fractions (0.0002 days is ~17 s), so tests run the real pruner in seconds. The ledger and the daily
    rollups (`usage_daily`, `ledger_daily`) are never pruned."""

    # Request log rows older than this are removed (0: kept forever). A team may override it (`log_days`).
    request_logs_days: float = Field(default=90.0, ge=0)
    # The retained `input`/`result` payloads are emptied this long after the request (0: kept with the row).
    log_payloads_days: float = Field(default=30.0, ge=0)
    # A finished task whose result has expired is removed this long after it ended, with its webhook
    # deliveries and attempts (0: kept forever); so are ended notification and operator-alert deliveries.
    tasks_days: float = Field(default=30.0, ge=0)
    # Read by the audit log's pruner (the audit table arrives with a later issue).
    audit_days: float = Field(default=400.0, ge=0)
    # How often the pruner runs; one process at a time prunes (an advisory lock on PostgreSQL).
    interval_seconds: float = Field(default=3600.0, gt=0)
    # Request log rows leave as gzip JSONL files under `archive/` in the file store before they are deleted.
    archive: bool = False
    # Rows per delete statement, and the least pause between two batches, so serving keeps the database.
    batch_rows: int = Field(default=500, ge=1, le=100_000)
    batch_pause_seconds: float = Field(default=0.05, ge=0)
    # The largest share of the time pruning batches may take: after a batch the pruner pauses long enough
    # (a batch of 30 ms at 0.25 is followed by 90 ms). 1.0: no pause beyond `batch_pause_seconds`.
    busy_share: float = Field(default=0.25, gt=0, le=1)


class RoutingSettings(BaseModel):
    """Text routing and failover (`settings.routing`, env prefix `MODELPORT_ROUTING__`; docs/api/text-gateway.md,
    Failover)."""

    # Upstream calls one request may make, over every deployment it is tried on.
    max_attempts: int = Field(default=3, ge=1, le=20)
    # No further upstream call starts once the request is this old (the call in flight is not cut).
    deadline_seconds: float = Field(default=300.0, gt=0)
    # A deployment cools down after this many failures within the window...
    failures_before_cooldown: int = Field(default=3, ge=1)
    failure_window_seconds: float = Field(default=60.0, gt=0)
    # ...for `upstream_cooldown_seconds`, doubled by each failure right after a cooldown, up to this.
    max_cooldown_seconds: float = Field(default=600.0, gt=0)


class ResponsesSettings(BaseModel):
    """Stored Responses (`settings.responses`, env prefix `MODELPORT_RESPONSES__`): a `POST /v1/responses`
    with `store` true keeps its response and input items this long, for `previous_response_id`, retrieval
    and deletion; the retention pruner removes them after."""

    store_days: float = Field(default=30.0, gt=0)
    # Overrides `store_days` when set (tests use a few seconds).
    store_seconds: float | None = Field(default=None, gt=0)
    # Background responses (`background: true`): how often a run looks for its cancellation (and renews its
    # lease), keeps the events it has streamed so far, and a client streaming one reads the new ones.
    background_poll_seconds: float = Field(default=0.5, gt=0, le=60)
    # Background responses one process runs at once (beside its media tasks).
    background_concurrency: int = Field(default=16, ge=1, le=1024)

    @property
    def lifetime_ms(self) -> int:
        seconds = self.store_seconds if self.store_seconds is not None else self.store_days * 86_400
        return int(seconds * 1000)


class CacheSettings(BaseModel):
    """The response cache (`settings.cache`, env prefix `MODELPORT_CACHE__`) of teams that turn it on
    (team setting `cache`): how long an answer is kept, the store's size bound, what a hit costs
    (docs/api/cache.md)."""

    # How long a stored answer is served, from when it was stored (a request's `X-Modelport-Cache-TTL`
    # asks for another, capped at `max_ttl_seconds`).
    ttl_seconds: int = Field(default=3600, ge=1)
    max_ttl_seconds: int = Field(default=86_400, ge=1)
    # The store's size bound (all teams): past it the least recently used entries are evicted.
    max_mb: float = Field(default=256.0, gt=0)
    # What a hit costs, as a share of the original answer's cost (0: hits are free).
    hit_price_share: Decimal = Field(default=Decimal(0), ge=0, le=1)

    @property
    def max_bytes(self) -> int:
        return int(self.max_mb * 1024 * 1024)


class AlertsSettings(BaseModel):
    """Operator alerts (`settings.alerts`, env prefix `MODELPORT_ALERTS__`): what the periodic check looks
    at and when it speaks. Sent only when `MODELPORT_OPERATOR_WEBHOOK_URL` is set (docs/alerts/README.md)."""

    # How often each process looks at the task backlog and the free disk space.
    check_interval_seconds: float = Field(default=30.0, gt=0)
    # `tasks.backlog`: a queued media task has waited longer than this for a worker.
    task_backlog_seconds: float = Field(default=600.0, gt=0)
    # `storage.low`: free space of the data directory's filesystem (SQLite or the local file store) below
    # either bound (0 turns that bound off).
    storage_free_bytes: int = Field(default=1024**3, ge=0)
    storage_free_percent: float = Field(default=5.0, ge=0, le=100)
    # Once low, storage is reported recovered only above the bounds by this fraction (no alert per byte
    # written and deleted around the threshold).
    storage_hysteresis_fraction: float = Field(default=0.1, ge=0, le=1)


class TracingSettings(BaseModel):
    """OpenTelemetry tracing (`pip install modelport[otel]`), off by default. The OTLP exporter reads the
    standard `OTEL_EXPORTER_OTLP_*` variables (endpoint, headers)."""

    enabled: bool = False
    # otlp: OTLP/HTTP to a collector (batched); console: stderr; file: JSON lines in `file` (debugging, tests).
    exporter: Literal["otlp", "console", "file"] = "otlp"
    file: Path | None = None
    service_name: str = "modelport"
    # Share of new traces recorded; a client's sampled flag is followed (parent-based sampling).
    sample_ratio: float = Field(default=1.0, ge=0, le=1)

    @model_validator(mode="after")
    def _file_needs_a_path(self) -> TracingSettings:
        if self.enabled and self.exporter == "file" and self.file is None:
            raise ValueError("tracing.exporter = file needs tracing.file (MODELPORT_TRACING__FILE)")
        return self


class TierSettings(BaseModel):
    """One rung of the tier ladder. A single top-up of at least `qualifying_topup_usd` moves a team here."""

    name: str
    qualifying_topup_usd: Decimal = Field(ge=0)
    inference_rpm: int = Field(gt=0)
    query_rpm: int = Field(gt=0)
    concurrent_media_tasks: int = Field(gt=0)
    concurrent_requests: int = Field(default=64, gt=0)
    # Text tokens per minute (input + output) of the team; None: no token limit.
    tpm: int | None = Field(default=None, gt=0)


def default_tiers() -> list[TierSettings]:
    return [
        TierSettings(
            name="free",
            qualifying_topup_usd=Decimal(0),
            inference_rpm=60,
            query_rpm=120,
            concurrent_media_tasks=2,
            concurrent_requests=16,
        ),
        TierSettings(
            name="tier1",
            qualifying_topup_usd=Decimal(10),
            inference_rpm=300,
            query_rpm=600,
            concurrent_media_tasks=5,
            concurrent_requests=64,
        ),
        TierSettings(
            name="tier2",
            qualifying_topup_usd=Decimal(100),
            inference_rpm=1000,
            query_rpm=2000,
            concurrent_media_tasks=10,
            concurrent_requests=256,
        ),
        TierSettings(
            name="tier3",
            qualifying_topup_usd=Decimal(1000),
            inference_rpm=5000,
            query_rpm=10000,
            concurrent_media_tasks=50,
            concurrent_requests=1024,
        ),
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
    # The text gateway's public base URL (the API reference's "Try it out" target); unset: the public
    # media URL's scheme and host name with `text_port`.
    public_text_url: str | None = None
    # Prometheus `/metrics` on its own port (unset: off); bound to `metrics_host`, default `host`.
    metrics_port: int | None = Field(default=None, ge=0, le=65535)
    metrics_host: str | None = None
    catalog: Path | None = None
    # At least 32 characters (start-up refuses a shorter one): it is every team's money and keys.
    admin_token: SecretStr | None = None
    # Failed admin-token attempts (admin API and operator sign-in) per client address per minute; past it,
    # every attempt from that address gets 429 until the window has room again.
    admin_failures_per_minute: int = Field(default=10, ge=1)
    # HMAC key for signed download URLs and webhook signatures, and the root of the key that encrypts
    # webhook secrets at rest; generated into data_dir when unset.
    secret_key: SecretStr | None = None
    # The secret key before a rotation: webhook secrets encrypted with it are still read, and re-encrypted
    # with the current key at the next `serve` start (docs/security.md, Rotating the secret key).
    previous_secret_key: SecretStr | None = None
    # How long a resolved API key stays cached in a process; revocation takes effect within this bound.
    auth_cache_seconds: float = Field(default=5.0, ge=0)
    # Prefix of every Redis key and channel (rate-limit state, the task-change channel): read it as
    # `redis_prefix`; processes that share limits and tasks use the same prefix. Named when only limits used it.
    ratelimit_prefix: str = "modelport"
    # Cap of each retained request/response payload in the request log (teams with log_retention on).
    log_payload_max_bytes: int = Field(default=64 * 1024, ge=256)
    demo_team: str = "demo"
    demo_balance_usd: Decimal = Field(default=Decimal(5), ge=0)
    log_level: str = "INFO"
    # JSON lines (true) or readable lines (false); unset: readable on a terminal, JSON otherwise.
    log_json: bool | None = None
    tiers: list[TierSettings] = Field(default_factory=default_tiers)
    files: FilesSettings = Field(default_factory=FilesSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    credit: CreditSettings = Field(default_factory=CreditSettings)
    # The SSRF-safe fetcher of user URLs (`MODELPORT_NET__ALLOW_HOSTS`, `MODELPORT_NET__CA_BUNDLE`).
    net: NetSettings = Field(default_factory=NetSettings)
    assets: AssetsSettings = Field(default_factory=AssetsSettings)
    tasks: TasksSettings = Field(default_factory=TasksSettings)
    webhooks: WebhookSettings = Field(default_factory=WebhookSettings)
    console: ConsoleSettings = Field(default_factory=ConsoleSettings)
    accounts: AccountsSettings = Field(default_factory=AccountsSettings)
    smtp: SmtpSettings = Field(default_factory=SmtpSettings)
    scim: ScimSettings = Field(default_factory=ScimSettings)
    oidc: OidcSettings = Field(default_factory=OidcSettings)
    tracing: TracingSettings = Field(default_factory=TracingSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    responses: ResponsesSettings = Field(default_factory=ResponsesSettings)
    cache: CacheSettings = Field(default_factory=CacheSettings)
    routing: RoutingSettings = Field(default_factory=RoutingSettings)
    # How long the text gateway keeps a deployment out of rotation after repeated failures (a process's own
    # view; an upstream 429's Retry-After wins when given).
    upstream_cooldown_seconds: float = Field(default=30.0, gt=0, le=600)
    # Operator alerts (`deployment.down`/`.up`, `tasks.backlog`, `storage.low`) go to this URL, signed with
    # `operator_webhook_secret` (a `whsec_` secret, required with the URL); unset: no operator alerts.
    operator_webhook_url: str | None = None
    operator_webhook_secret: SecretStr | None = None
    alerts: AlertsSettings = Field(default_factory=AlertsSettings)

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

    @field_validator("admin_token", mode="before")
    @classmethod
    def _empty_admin_token_is_unset(cls, value: Any) -> Any:
        # `MODELPORT_ADMIN_TOKEN=` (compose's default) means no admin API, never an empty token.
        return None if value == "" else value

    @field_validator("admin_token")
    @classmethod
    def _check_admin_token(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and len(value.get_secret_value()) < MIN_ADMIN_TOKEN_LENGTH:
            raise ValueError(
                f"MODELPORT_ADMIN_TOKEN must be at least {MIN_ADMIN_TOKEN_LENGTH} characters: it opens the admin"
                " API and the operator console (every team's keys and money), so it must not be guessable."
                " Make one with: python -c 'import secrets; print(secrets.token_urlsafe(32))'"
            )
        return value

    @field_validator("public_media_url", "public_text_url")
    @classmethod
    def _check_public_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        if not value.startswith(("https://", "http://")):
            raise ValueError("must be an http(s) URL")
        return value.rstrip("/")

    @field_validator("operator_webhook_url", "operator_webhook_secret", mode="before")
    @classmethod
    def _empty_is_unset(cls, value: Any) -> Any:
        return None if value == "" else value

    @field_validator("operator_webhook_secret")
    @classmethod
    def _check_operator_secret(cls, value: SecretStr | None) -> SecretStr | None:
        if value is not None and not is_webhook_secret(value.get_secret_value()):
            raise ValueError(
                "must be a Standard Webhooks secret: whsec_ and the base64 of 24 to 64 random bytes"
                " (docs/alerts/README.md shows how to make one)"
            )
        return value

    @model_validator(mode="after")
    def _operator_url_needs_secret(self) -> Settings:
        if self.operator_webhook_url is not None and self.operator_webhook_secret is None:
            raise ValueError(
                "MODELPORT_OPERATOR_WEBHOOK_URL needs MODELPORT_OPERATOR_WEBHOOK_SECRET (the whsec_ secret that"
                " signs the operator's alerts)"
            )
        return self

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
    def redis_prefix(self) -> str:
        """The prefix of this deployment's Redis keys and channels (setting `ratelimit_prefix`)."""
        return self.ratelimit_prefix

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

    @property
    def effective_public_text_url(self) -> str:
        if self.public_text_url:
            return self.public_text_url
        media = urlsplit(self.effective_public_media_url)
        host = f"[{media.hostname}]" if media.hostname and ":" in media.hostname else media.hostname
        return f"{media.scheme}://{host}:{self.text_port}"

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
            "public_text_url": self.effective_public_text_url,
            "trusted_proxies": self.server.trusted_proxies,
            "admin_api": self.admin_token is not None,
            "files_backend": self.files.backend,
            "net_allow_hosts": sorted(self.net.allowed_pairs()),
            "assets_backend": self.assets.backend,
            "net_ca_bundle": str(self.net.ca_bundle) if self.net.ca_bundle else None,
            "task_workers": self.tasks.run_workers,
            "operator_alerts": self.operator_webhook_url is not None,
            "oidc": self.oidc.issuer,
        }


def is_webhook_secret(value: str) -> bool:
    """`whsec_` + standard base64 of 24 to 64 bytes (the Standard Webhooks secret form)."""
    if not value.startswith("whsec_"):
        return False
    try:
        raw = base64.b64decode(value.removeprefix("whsec_"), validate=True)
    except ValueError:
        return False
    return 24 <= len(raw) <= 64


def load_settings(**overrides: Any) -> Settings:
    """Read and validate the settings; raises pydantic.ValidationError with field-level messages."""
    return Settings(**overrides)
