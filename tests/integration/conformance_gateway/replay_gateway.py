"""A real `modelport serve` whose models each point at a ReplayUpstream of one recorded cassette.

Every `Slot` becomes one catalog model ``replay/<slot>`` with one deployment of the given upstream kind,
whose upstream model name is the one the cassette recorded (so on the fast path the replay server must
receive the recorded body exactly). A cassette's interactions are served once, in order: a test that wants
the same cassette twice (raw HTTP and an SDK, say) declares two slots.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai

from tests.support.cassettes import Interaction
from tests.support.replay_upstream import ReplayUpstream
from tests.support.server import RunningServer, run_server

# The key the gateway sends upstream; it must never come back to a client.
UPSTREAM_KEY = "sk-replay-upstream-secret-6f1c2d"
UPSTREAM_KEY_ENV = "REPLAY_UPSTREAM_KEY"

# Generous limits: a module sends a few dozen requests in a burst.
CONFIG_TOML = """
[[tiers]]
name = "free"
qualifying_topup_usd = "0"
inference_rpm = 100000
query_rpm = 100000
concurrent_media_tasks = 2
concurrent_requests = 64
"""

# Which endpoint path a protocol's client calls on the gateway, and the upstream kind that speaks it.
CLIENT_PATH = {
    "openai_chat": "/v1/chat/completions",
    "openai_responses": "/v1/responses",
    "anthropic_messages": "/v1/messages",
}
KIND_OF_FOLDER = {
    "openai_chat": "openai_chat",
    "openai_responses": "openai_responses",
    "anthropic_messages": "anthropic",
}


@dataclass(frozen=True)
class Slot:
    """One catalog model backed by one cassette. `cassette` is ``<protocol folder>/<file stem>``."""

    name: str
    cassette: str
    kind: str | None = None  # upstream kind; by default the one the cassette's folder speaks
    # A second deployment of the same model, replaying this cassette (kind from its folder).
    fallback: str | None = None

    @property
    def folder(self) -> str:
        return self.cassette.split("/", 1)[0]

    @property
    def upstream_kind(self) -> str:
        return self.kind or KIND_OF_FOLDER[self.folder]

    @property
    def model_id(self) -> str:
        return f"replay/{self.name}"

    @property
    def fallback_slot(self) -> Slot | None:
        return None if self.fallback is None else Slot(f"{self.name}-fallback", self.fallback)


@dataclass
class ReplayGateway:
    server: RunningServer
    key: str
    replays: dict[str, ReplayUpstream]

    def replay(self, slot: Slot) -> ReplayUpstream:
        return self.replays[slot.name]

    def fallback_replay(self, slot: Slot) -> ReplayUpstream:
        assert slot.fallback_slot is not None
        return self.replays[slot.fallback_slot.name]

    def interactions(self, slot: Slot) -> tuple[Interaction, ...]:
        return self.replays[slot.name].interactions

    @property
    def openai(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=self.server.text_url + "/v1", api_key=self.key, max_retries=0)

    @property
    def anthropic(self) -> anthropic.Anthropic:
        return anthropic.Anthropic(base_url=self.server.text_url, api_key=self.key, max_retries=0)

    def post(self, path: str, body: dict[str, Any], **kw: Any) -> httpx.Response:
        return httpx.post(self.server.text_url + path, json=body, headers=self.auth_headers(), timeout=30, **kw)

    def auth_headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.key}"}

    @contextmanager
    def stream(self, path: str, body: dict[str, Any]) -> Iterator[httpx.Response]:
        with httpx.stream(
            "POST", self.server.text_url + path, json=body, headers=self.auth_headers(), timeout=30
        ) as response:
            yield response


def _recorded_model(interactions: Sequence[Interaction]) -> str:
    for it in interactions:
        if isinstance(it.request_json, dict) and isinstance(it.request_json.get("model"), str):
            return str(it.request_json["model"])
    return "recorded-model"


def _deployment_toml(slot: Slot, replay: ReplayUpstream) -> str:
    kind = slot.upstream_kind
    base = replay.base_url if kind == "anthropic" else replay.base_url + "/v1"
    return f'''
[[text_models.deployments]]
name = "{slot.name}"
kind = "{kind}"
base_url = "{base}"
model = "{_recorded_model(replay.interactions)}"
api_key_env = "{UPSTREAM_KEY_ENV}"
'''


def catalog_toml(slots: Sequence[Slot], replays: dict[str, ReplayUpstream]) -> str:
    out = []
    for slot in slots:
        out.append(f'''[[text_models]]
id = "{slot.model_id}"
prices = {{ input = "1", output = "2", cache_read = "0.5", cache_write = "1.25" }}
''')
        out.append(_deployment_toml(slot, replays[slot.name]))
        if slot.fallback_slot is not None:
            out.append(_deployment_toml(slot.fallback_slot, replays[slot.fallback_slot.name]))
    return "\n".join(out)


@contextmanager
def replay_gateway(tmp: Path, slots: Sequence[Slot]) -> Iterator[ReplayGateway]:
    """Start one ReplayUpstream per slot and one gateway whose catalog points at them."""
    names = [s.name for s in slots] + [s.fallback_slot.name for s in slots if s.fallback_slot is not None]
    assert len(names) == len(set(names)), f"duplicate slot names: {names}"
    with ExitStack() as stack:
        every = [*slots, *(s.fallback_slot for s in slots if s.fallback_slot is not None)]
        replays = {s.name: stack.enter_context(ReplayUpstream(s.cassette)) for s in every}
        catalog = tmp / "catalog.toml"
        catalog.write_text(catalog_toml(slots, replays))
        config = tmp / "config.toml"
        config.write_text(CONFIG_TOML)
        server = stack.enter_context(
            run_server(
                tmp,
                MODELPORT_CATALOG=str(catalog),
                MODELPORT_CONFIG=str(config),
                MODELPORT_DEMO_BALANCE_USD="1000",
                REPLAY_UPSTREAM_KEY=UPSTREAM_KEY,
            )
        )
        assert server.demo_key is not None
        yield ReplayGateway(server, server.demo_key, replays)
