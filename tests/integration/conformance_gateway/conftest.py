"""Fixtures of the end-to-end conformance tests of the text gateway.

A replay module declares the cassettes it needs as a module-level ``SLOTS`` list of `Slot`s; the `gw`
fixture then starts one ReplayUpstream per slot and one real `modelport serve` for the whole module.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.integration.conformance_gateway.replay_gateway import ReplayGateway, replay_gateway


@pytest.fixture(scope="module")
def gw(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ReplayGateway]:
    slots = getattr(request.module, "SLOTS", None)
    assert slots, f"{request.module.__name__} declares no SLOTS"
    with replay_gateway(tmp_path_factory.mktemp(request.module.__name__.rsplit(".", 1)[-1]), slots) as gateway:
        yield gateway
