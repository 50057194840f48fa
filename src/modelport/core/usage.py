"""Normalised token usage.

Conventions (they differ between providers, so each codec converts at its boundary):
- `input_tokens` counts ALL input tokens, including cache reads and cache writes. OpenAI
  ``prompt_tokens`` already does; Anthropic ``input_tokens`` does not, so the Anthropic codec adds
  ``cache_read_input_tokens`` and ``cache_creation_input_tokens``.
- `output_tokens` counts ALL output tokens, including reasoning tokens.
- `audio_input_tokens`, `video_input_tokens`, `image_input_tokens` and `reasoning_tokens` are
  informational breakdowns, already inside the totals above; they are never billed on top.
  `reasoning_tokens` is None when the upstream did not say (encoders then leave it out where their
  protocol allows, rather than claim 0).
- `cache_write_tokens` counts ALL cache writes; `cache_write_1h_tokens` is the share of them written with a
  one-hour lifetime (Anthropic bills them at another rate), inside `cache_write_tokens`.
- `service_tier` is the processing tier the upstream says it used (None: it did not say); it picks the
  price table (`billing.pricing`).
Billing: uncached input × input rate + cache read × read rate + 5-minute cache write × its rate + 1-hour
cache write × its rate + output × output rate.
"""

from __future__ import annotations

import logging
import math
from dataclasses import dataclass, fields

log = logging.getLogger("modelport.usage")

# No real request comes near a billion tokens. A count an upstream reports above this is clamped (and
# logged), so a charge computed from it stays far inside the ledger's signed 64-bit micro-USD and the
# request log's 32-bit token columns, whatever a hostile or broken upstream says.
MAX_TOKENS = 10**9


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    cache_write_1h_tokens: int = 0
    reasoning_tokens: int | None = None
    audio_input_tokens: int = 0
    video_input_tokens: int = 0
    image_input_tokens: int = 0
    service_tier: str | None = None

    def __post_init__(self) -> None:
        # Sums (Anthropic's input + cache counts, several calls added up) are bounded here too. The common
        # case (every count in range) is one expression: this runs several times per text request.
        if (
            0 <= self.input_tokens <= MAX_TOKENS
            and 0 <= self.output_tokens <= MAX_TOKENS
            and 0 <= self.cache_read_tokens <= MAX_TOKENS
            and 0 <= self.cache_write_1h_tokens <= self.cache_write_tokens <= MAX_TOKENS
            and (self.reasoning_tokens is None or 0 <= self.reasoning_tokens <= MAX_TOKENS)
            and 0 <= self.audio_input_tokens <= MAX_TOKENS
            and 0 <= self.video_input_tokens <= MAX_TOKENS
            and 0 <= self.image_input_tokens <= MAX_TOKENS
        ):
            return
        for name in _COUNT_FIELDS:
            value = getattr(self, name)
            if value is not None and not 0 <= value <= MAX_TOKENS:
                object.__setattr__(self, name, _bounded(value, name))
        if self.cache_write_1h_tokens > self.cache_write_tokens:  # a share cannot exceed its whole
            object.__setattr__(self, "cache_write_1h_tokens", self.cache_write_tokens)

    @property
    def uncached_input_tokens(self) -> int:
        """Input tokens billed at the plain input rate."""
        return max(0, self.input_tokens - self.cache_read_tokens - self.cache_write_tokens)

    @property
    def cache_write_5m_tokens(self) -> int:
        """Cache writes with the default (5-minute) lifetime."""
        return self.cache_write_tokens - self.cache_write_1h_tokens

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        """Sum of two usages (e.g. several upstream calls for one client request)."""
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            cache_write_1h_tokens=self.cache_write_1h_tokens + other.cache_write_1h_tokens,
            reasoning_tokens=None
            if self.reasoning_tokens is None and other.reasoning_tokens is None
            else (self.reasoning_tokens or 0) + (other.reasoning_tokens or 0),
            audio_input_tokens=self.audio_input_tokens + other.audio_input_tokens,
            video_input_tokens=self.video_input_tokens + other.video_input_tokens,
            image_input_tokens=self.image_input_tokens + other.image_input_tokens,
            service_tier=other.service_tier or self.service_tier,
        )


_COUNT_FIELDS = tuple(f.name for f in fields(Usage) if f.name != "service_tier")


def _bounded(value: int, what: str) -> int:
    if value < 0:
        return 0
    log.warning("upstream reported %s = %s tokens; counted as %d", what, value, MAX_TOKENS)
    return MAX_TOKENS


def as_count(value: object) -> int:
    """A token count from a JSON value: whole numbers pass (negative ones are 0, ones above `MAX_TOKENS`
    are clamped to it); anything else (None, missing, fractional, NaN, strings) is 0."""
    if type(value) is int and 0 <= value <= MAX_TOKENS:
        return value  # the common cases first: several counts per request
    if value is None:
        return 0
    if isinstance(value, bool):
        return 0
    if isinstance(value, float):
        if not math.isfinite(value) or not value.is_integer():
            return 0
        value = int(value)
    if isinstance(value, int):
        return value if 0 <= value <= MAX_TOKENS else _bounded(value, "a count")
    return 0


def as_tier(value: object) -> str | None:
    """The processing tier an upstream reports (`service_tier`): a non-empty string, else None (unknown)."""
    return value if isinstance(value, str) and value else None


def as_optional_count(value: object) -> int | None:
    """A token count the upstream may not report: None when absent or null, else `as_count`."""
    return None if value is None else as_count(value)
