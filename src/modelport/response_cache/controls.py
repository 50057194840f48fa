"""A request's cache controls (docs/api/cache.md): `X-Modelport-Cache: use|skip|refresh`, `Cache-Control:
no-store` (skip) and `no-cache` (refresh), `X-Modelport-Cache-TTL` (seconds, capped); and the team modes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import StrEnum

from modelport.errors import InvalidParameters
from modelport.strict_int import MAX_INT, bounded_int


class CacheMode(StrEnum):
    """A team's setting `cache`: off, shared by the team's keys, or per key."""

    OFF = "off"
    TEAM = "team"
    KEY = "key"


class Use(StrEnum):
    """What a request does with the cache: read and write it, neither, or write a fresh answer only."""

    USE = "use"
    SKIP = "skip"
    REFRESH = "refresh"


HEADER = "X-Modelport-Cache"
TTL_HEADER = "X-Modelport-Cache-TTL"
_CONTROL_HEADERS = frozenset({b"x-modelport-cache", b"x-modelport-cache-ttl", b"cache-control"})


@dataclass(frozen=True, slots=True)
class Controls:
    use: Use
    ttl_seconds: int


def check_mode(value: str) -> CacheMode:
    try:
        return CacheMode(value.strip().lower())
    except ValueError:
        raise InvalidParameters("cache must be off, team or key", param="cache") from None


def read_controls(raw: Iterable[tuple[bytes, bytes]], default_ttl: int, max_ttl: int) -> Controls:
    """The controls of a request from its raw ASGI headers (400 for a value that is none of them)."""
    found: dict[bytes, str] = {}
    for name, value in raw:
        if name in _CONTROL_HEADERS:
            previous = found.get(name)
            text = value.decode("latin-1")
            found[name] = text if previous is None else f"{previous},{text}"
    return controls_from(found, default_ttl, max_ttl)


def controls_from(found: Mapping[bytes, str], default_ttl: int, max_ttl: int) -> Controls:
    use = Use.USE
    directives = {d.strip().lower().partition("=")[0] for d in found.get(b"cache-control", "").split(",")}
    if "no-cache" in directives:
        use = Use.REFRESH
    if "no-store" in directives:
        use = Use.SKIP
    asked = found.get(b"x-modelport-cache")
    if asked is not None:
        try:
            use = Use(asked.strip().lower())
        except ValueError:
            raise InvalidParameters(f"{HEADER} must be use, skip or refresh", param=HEADER) from None
    ttl = default_ttl
    raw_ttl = found.get(b"x-modelport-cache-ttl")
    if raw_ttl is not None:
        ttl = min(bounded_int(raw_ttl, TTL_HEADER, low=1, high=MAX_INT), max_ttl)
    return Controls(use, ttl)
