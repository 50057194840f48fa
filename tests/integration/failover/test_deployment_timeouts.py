"""A deployment's `connect_timeout_seconds` and `stream_idle_timeout_seconds`, against a real `modelport serve`.

A connect timeout is a failure before the first byte: the next deployment answers, within about the timeout.
A stream that goes quiet past its idle timeout after content was relayed is committed to its deployment: it
ends with one error, is logged once and billed for what was sent, and no other deployment is called.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path

import pytest

from tests.integration.failover.test_chaos_failover import (
    ADMIN,
    B_COST,
    B_USAGE,
    CLIENTS,
    PRICES,
    Chaos,
    Client,
    _base,
    _send,
)
from tests.support.fake_upstream import FakeUpstream, Reply, Usage
from tests.support.server import run_server

CONNECT_TIMEOUT = 1.0
IDLE_TIMEOUT = 1.0
STALL = 30.0  # far past the idle timeout: only the gateway's idle timeout ends the stream in time
SLACK = 12.0  # a loaded machine


@dataclass
class Timeouts:
    chaos: Chaos
    stuck_port: int


def _stuck_listener() -> tuple[socket.socket, list[socket.socket]]:
    """A localhost port whose connections never complete: a listener that never accepts, its queue full
    (the kernel then drops new SYNs, so a connect waits until its timeout)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    fillers: list[socket.socket] = []
    for _ in range(64):
        filler = socket.socket()
        filler.settimeout(0.5)
        try:
            filler.connect(listener.getsockname())
        except TimeoutError:
            filler.close()
            return listener, fillers
        fillers.append(filler)
    for sock in (listener, *fillers):
        sock.close()
    pytest.fail("the listener's queue never filled")


def _catalog(flaky: str, healthy: str, stuck: str) -> str:
    out = []
    for client in CLIENTS[:3]:
        for suffix, first, extra in (
            ("connect", stuck, f"connect_timeout_seconds = {CONNECT_TIMEOUT}"),
            ("idle", flaky, f"stream_idle_timeout_seconds = {IDLE_TIMEOUT}"),
        ):
            out.append(f"""[[text_models]]
id = "timeouts/{client.name}-{suffix}"
prices = {PRICES}
deployments = [
  {{ name = "a", kind = "{client.kind}", base_url = "{_base(first, client.kind)}", model = "a", {extra} }},
  {{ name = "b", kind = "{client.kind}", base_url = "{_base(healthy, client.kind)}", model = "b", weight = 0 }},
]
""")
    return "\n".join(out)


@pytest.fixture(scope="module")
def timeouts(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Timeouts]:
    tmp = tmp_path_factory.mktemp("timeouts")
    listener, fillers = _stuck_listener()
    port = int(listener.getsockname()[1])
    try:
        with FakeUpstream() as flaky, FakeUpstream(Reply.text("served by b", usage=B_USAGE)) as healthy:
            catalog = tmp / "catalog.toml"
            catalog.write_text(_catalog(flaky.base_url, healthy.base_url, f"http://127.0.0.1:{port}"))
            with run_server(
                Path(tmp),
                MODELPORT_CATALOG=str(catalog),
                MODELPORT_ADMIN_TOKEN=ADMIN,
                MODELPORT_ROUTING__FAILURES_BEFORE_COOLDOWN="1000",
            ) as server:
                yield Timeouts(Chaos(server, flaky, healthy), port)
    finally:
        for sock in (listener, *fillers):
            sock.close()


_ids = iter(range(1_000_000))


def _fresh(chaos: Chaos) -> str:
    chaos.flaky.reset()
    chaos.healthy.reset()
    return chaos.team(f"timeouts-{next(_ids)}")


@pytest.mark.parametrize("stream", [True, False], ids=["stream", "whole"])
@pytest.mark.parametrize("client", CLIENTS[:3], ids=lambda c: c.name)
def test_a_connect_timeout_fails_over_to_the_next_deployment_within_about_the_timeout(
    timeouts: Timeouts, client: Client, stream: bool
) -> None:
    chaos = timeouts.chaos
    key = _fresh(chaos)
    started = time.monotonic()
    got = _send(chaos, client, key, f"timeouts/{client.name}-connect", stream)
    took = time.monotonic() - started
    assert (got.status, got.errors, got.ended, got.text) == (200, 0, True, "served by b"), got
    # The connect waited its timeout (the port never completes a handshake), then B answered; the
    # deployment's read timeout (600 s by default) played no part.
    assert CONNECT_TIMEOUT * 0.9 <= took < CONNECT_TIMEOUT + SLACK, took
    assert chaos.healthy.call_count() == 1
    rows = chaos.logs(key, 1)
    assert [(r["status"], Decimal(str(r["cost"]))) for r in rows] == [("success", B_COST)]
    assert chaos.settled_balance(key) == Decimal(10) - B_COST


@pytest.mark.parametrize("client", CLIENTS[:3], ids=lambda c: c.name)
def test_a_stream_idle_past_its_timeout_after_content_ends_with_one_error_and_is_billed(
    timeouts: Timeouts, client: Client
) -> None:
    chaos = timeouts.chaos
    key = _fresh(chaos)
    words = " ".join(f"w{i}" for i in range(30))
    chaos.flaky.push(Reply.text(words, usage=Usage(10, 30), stall_after=8, stall_seconds=STALL))
    started = time.monotonic()
    got = _send(chaos, client, key, f"timeouts/{client.name}-idle", True)
    took = time.monotonic() - started
    assert got.status == 200 and got.errors == 1 and not got.ended, got
    assert got.text and words.startswith(got.text) and got.text != words  # A's first words, then the error
    assert IDLE_TIMEOUT * 0.9 <= took < STALL - 5, took  # the idle timeout ended it, not the upstream
    assert chaos.healthy.call_count() == 0  # content was relayed: no failover
    rows = chaos.logs(key, 1)
    assert len(rows) == 1 and rows[0]["status"] == "error"
    cost = Decimal(str(rows[0]["cost"]))
    assert cost > 0 and chaos.settled_balance(key) == Decimal(10) - cost
