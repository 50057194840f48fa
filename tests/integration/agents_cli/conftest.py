"""Claude Code and Codex CLI, installed from npm by `scripts/install_agents.sh`, against a real `modelport serve`
whose catalog points at the coding-task fake upstream of every kind.

The CLIs are looked up in `MODELPORT_AGENTS_DIR` (default `.tools/agents` in the repo). A missing CLI fails
the tests: they never skip.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.agent_upstream import CodingTaskUpstream
from tests.support.server import RunningServer, run_server

REPO = Path(__file__).resolve().parents[3]
AGENTS_DIR = Path(os.environ.get("MODELPORT_AGENTS_DIR", REPO / ".tools" / "agents"))
CLAUDE = AGENTS_DIR / "node_modules" / "@anthropic-ai" / "claude-code" / "bin" / "claude.exe"
CODEX = AGENTS_DIR / "node_modules" / ".bin" / "codex"
TASK = (
    f"Create the file {'modelport_task.py'} in the current directory, run it with python3, and tell me what it printed."
)

# catalog id → upstream kind; one deployment each, on the coding-task fake.
MODELS = {"agents/claude": "anthropic", "agents/chat": "openai_chat", "agents/responses": "openai_responses"}


def catalog_toml(base: str) -> str:
    out = []
    for model_id, kind in MODELS.items():
        url = base if kind == "anthropic" else base + "/v1"
        out.append(f'''[[text_models]]
id = "{model_id}"
prices = {{ input = "1", output = "2" }}
context_window = 200000
max_output_tokens = 8192
deployments = [{{ kind = "{kind}", base_url = "{url}", model = "up-{kind}", api_key_env = "AGENT_UPSTREAM_KEY" }}]
''')
    return "\n".join(out)


@dataclass
class AgentGateway:
    server: RunningServer
    upstream: CodingTaskUpstream
    key: str


def require_cli(path: Path) -> Path:
    if not os.access(path, os.X_OK):
        pytest.fail(f"{path} is missing: run `bash scripts/install_agents.sh` (scripts/test.sh does)")
    return path


@pytest.fixture(scope="package")
def agent_gateway(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentGateway]:
    tmp = tmp_path_factory.mktemp("agents")
    with CodingTaskUpstream(tmp) as upstream:
        catalog = tmp / "catalog.toml"
        catalog.write_text(catalog_toml(upstream.base_url))
        with run_server(
            tmp,
            MODELPORT_CATALOG=str(catalog),
            MODELPORT_DEMO_BALANCE_USD="50",
            AGENT_UPSTREAM_KEY="sk-agent-upstream",
        ) as server:
            assert server.demo_key is not None
            yield AgentGateway(server, upstream, server.demo_key)


@pytest.fixture
def agents(agent_gateway: AgentGateway, tmp_path: Path) -> AgentGateway:
    agent_gateway.upstream.reset()
    agent_gateway.upstream.workdir = tmp_path / "work"
    agent_gateway.upstream.workdir.mkdir()
    return agent_gateway


def clean_env(home: Path) -> dict[str, str]:
    """The machine's environment without any vendor key or endpoint, with a private HOME."""
    drop = ("ANTHROPIC_", "CLAUDE", "OPENAI_", "CODEX_", "MODELPORT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    env["HOME"] = str(home)
    home.mkdir(parents=True, exist_ok=True)
    return env


def run_cli(
    argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float = 180
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL
    )
