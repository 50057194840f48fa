"""Claude Code and Codex CLI complete a coding task (write a file, run it, report its output) through modelport.

Each CLI runs non-interactively against a real `modelport serve` whose model points at the coding-task fake
upstream of one kind, with thinking/reasoning off and on. The fake answers only requests its vendor would
accept (signed thinking sent back, reasoning items with encrypted content sent back, tool arguments that are
JSON, tool results answering tool calls): any other request gets the vendor's 400, which the CLI reports.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.integration.agents_cli.conftest import (
    CLAUDE,
    CODEX,
    MODELS,
    TASK,
    AgentGateway,
    clean_env,
    require_cli,
    run_cli,
)
from tests.support.agent_upstream import EXPECTED_OUTPUT, FILE_NAME, PROGRAM, tool_results

pytestmark = pytest.mark.agents_cli


CLAUDE_CASES = [
    pytest.param("agents/claude", False, id="anthropic-thinking-off"),
    pytest.param("agents/claude", True, id="anthropic-thinking-on"),
    pytest.param("agents/chat", False, id="chat-thinking-off"),
    pytest.param("agents/chat", True, id="chat-thinking-on"),
    pytest.param("agents/responses", False, id="responses-thinking-off"),
    pytest.param("agents/responses", True, id="responses-thinking-on"),
]
CODEX_CASES = [
    pytest.param("agents/responses", False, id="responses-reasoning-off"),
    pytest.param("agents/responses", True, id="responses-reasoning-on"),
    pytest.param("agents/chat", False, id="chat-reasoning-off"),
    pytest.param("agents/chat", True, id="chat-reasoning-on"),
    pytest.param("agents/claude", False, id="anthropic-reasoning-off"),
    pytest.param("agents/claude", True, id="anthropic-reasoning-on"),
]

PROTO = {"anthropic": "messages", "openai_chat": "chat", "openai_responses": "responses"}


def _explain(result: subprocess.CompletedProcess[str], agents: AgentGateway) -> str:
    violations = [(v.path, v.error.message) for v in agents.upstream.violations]
    return f"exit {result.returncode}\nstdout: {result.stdout[-3000:]}\nstderr: {result.stderr[-3000:]}\n{violations=}"


def _task_requests(agents: AgentGateway, kind: str) -> list[dict[str, Any]]:
    """Upstream requests of the coding task (those that offered tools), in order."""
    return [r.json for r in agents.upstream.requests if r.json.get("tools")]


def _check_task_done(result: subprocess.CompletedProcess[str], agents: AgentGateway, kind: str) -> None:
    why = _explain(result, agents)
    assert agents.upstream.violations == [], why
    assert result.returncode == 0, why
    written = agents.upstream.workdir / FILE_NAME
    assert written.is_file(), why
    assert written.read_text().strip() == PROGRAM.strip()
    assert EXPECTED_OUTPUT in result.stdout, why
    task = _task_requests(agents, kind)
    # Turn 1 asks, turn 2 carries the write's result, turn 3 the run's result with the program's output.
    results = [tool_results(PROTO[kind], body) for body in task]
    assert len(results[-1]) >= 2 and EXPECTED_OUTPUT in results[-1][-1], why
    assert all(r.headers.get("authorization") or r.headers.get("x-api-key") for r in agents.upstream.requests)


def _sent_back_thinking(agents: AgentGateway, kind: str) -> bool:
    """Whether a later request carried the thinking (Messages) or reasoning item (Responses) the fake issued."""
    for body in _task_requests(agents, kind):
        if kind == "anthropic":
            for message in body["messages"]:
                content = message.get("content")
                if isinstance(content, list) and any(b.get("type") == "thinking" for b in content):
                    return True
        elif kind == "openai_responses" and any(
            isinstance(i, dict) and i.get("type") == "reasoning" for i in body.get("input") or []
        ):
            return True
    return False


def _thinking_was_on(agents: AgentGateway, kind: str) -> bool:
    body = _task_requests(agents, kind)[0]
    if kind == "anthropic":
        return (body.get("thinking") or {}).get("type") in ("enabled", "adaptive")
    if kind == "openai_chat":
        return body.get("reasoning_effort") not in (None, "none")
    return (body.get("reasoning") or {}).get("effort") not in (None, "none")


def run_claude(agents: AgentGateway, model: str, thinking: bool, tmp: Path) -> subprocess.CompletedProcess[str]:
    claude = require_cli(CLAUDE)
    env = clean_env(tmp / "home")
    env.update(
        {
            "ANTHROPIC_BASE_URL": agents.server.text_url,
            "ANTHROPIC_API_KEY": agents.key,
            "IS_SANDBOX": "1",  # lets --dangerously-skip-permissions run as root (CI runs as root)
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
        }
    )
    settings = json.dumps({"alwaysThinkingEnabled": thinking})
    argv = [str(claude), "-p", TASK, "--dangerously-skip-permissions", "--model", model, "--settings", settings]
    return run_cli(argv, cwd=agents.upstream.workdir, env=env)


def run_codex(agents: AgentGateway, model: str, reasoning: bool, tmp: Path) -> subprocess.CompletedProcess[str]:
    codex = require_cli(CODEX)
    home = tmp / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        f'''model = "{model}"
model_provider = "modelport"
model_reasoning_effort = "{"medium" if reasoning else "none"}"

[model_providers.modelport]
name = "modelport"
base_url = "{agents.server.text_url}/v1"
env_key = "MODELPORT_TEST_KEY"
wire_api = "responses"
'''
    )
    env = clean_env(tmp / "home")
    env.update({"CODEX_HOME": str(home), "MODELPORT_TEST_KEY": agents.key})
    argv = [
        str(codex),
        "exec",
        "--skip-git-repo-check",
        "--dangerously-bypass-approvals-and-sandbox",
        "-C",
        str(agents.upstream.workdir),
        TASK,
    ]
    return run_cli(argv, cwd=agents.upstream.workdir, env=env)


@pytest.mark.parametrize(("model", "thinking"), CLAUDE_CASES)
def test_claude_code_completes_a_coding_task(agents: AgentGateway, model: str, thinking: bool, tmp_path: Path) -> None:
    kind = MODELS[model]
    result = run_claude(agents, model, thinking, tmp_path)
    _check_task_done(result, agents, kind)
    assert _thinking_was_on(agents, kind) is thinking
    if thinking and kind in ("anthropic", "openai_responses"):
        assert _sent_back_thinking(agents, kind), "the thinking/reasoning did not come back on the next turn"


@pytest.mark.parametrize(("model", "reasoning"), CODEX_CASES)
def test_codex_completes_a_coding_task(agents: AgentGateway, model: str, reasoning: bool, tmp_path: Path) -> None:
    kind = MODELS[model]
    result = run_codex(agents, model, reasoning, tmp_path)
    _check_task_done(result, agents, kind)
    assert _thinking_was_on(agents, kind) is reasoning
    if reasoning and kind in ("anthropic", "openai_responses"):
        assert _sent_back_thinking(agents, kind), "the thinking/reasoning did not come back on the next turn"
