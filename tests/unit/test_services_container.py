"""The per-process container: typed keys, one lifecycle (start in order, close in reverse), shared by apps."""

from __future__ import annotations

from pathlib import Path

import pytest

from modelport.services import ServiceKey, Services
from modelport.settings import Settings


class Recorder:
    def __init__(self, name: str, events: list[str]) -> None:
        self.name, self.events = name, events

    async def start(self) -> None:
        self.events.append(f"start {self.name}")

    async def aclose(self) -> None:
        self.events.append(f"close {self.name}")


class Plain:
    """A service with no lifecycle of its own."""


FIRST: ServiceKey[Recorder] = ServiceKey("first")
SECOND: ServiceKey[Recorder] = ServiceKey("second")
PLAIN: ServiceKey[Plain] = ServiceKey("plain")


async def test_services_start_in_order_and_close_in_reverse_once_for_two_apps(tmp_path: Path) -> None:
    events: list[str] = []
    services = Services(Settings(data_dir=tmp_path))
    first = services.add(FIRST, Recorder("first", events))
    services.add(SECOND, Recorder("second", events))
    services.add(PLAIN, Plain())
    assert services[FIRST] is first and isinstance(services[PLAIN], Plain)
    await services.start()
    await services.start()  # the second app of the process
    assert events == ["start first", "start second"]
    await services.aclose()
    assert events == ["start first", "start second"]  # the other app still runs
    await services.aclose()
    assert events == ["start first", "start second", "close second", "close first"]


def test_a_key_is_added_once_and_a_missing_one_says_where_services_are_built(tmp_path: Path) -> None:
    services = Services(Settings(data_dir=tmp_path))
    services.add(PLAIN, Plain())
    with pytest.raises(ValueError, match="registered already"):
        services.add(PLAIN, Plain())
    with pytest.raises(LookupError, match=r"apps/assemble\.py"):
        services[FIRST]


async def test_the_container_makes_the_one_redis_client_and_the_limiters_use_it(tmp_path: Path) -> None:
    services = Services(Settings(data_dir=tmp_path, redis_url="redis://127.0.0.1:1/0"))
    assert services.redis is not None
    assert services.limiters.rate._redis is services.redis  # type: ignore[attr-defined]
    assert services.limiters.concurrency._redis is services.redis  # type: ignore[attr-defined]
    await services.start()
    await services.aclose()  # closes the client it made (nothing connected: no server at that port)
    assert Services(Settings(data_dir=tmp_path)).redis is None
