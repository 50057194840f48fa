"""A fake upstream that plays a coding task for a real coding agent (Claude Code, Codex CLI).

A real HTTP server on 127.0.0.1 answering `POST .../v1/messages`, `.../chat/completions` and
`.../responses` in each vendor's shape, streamed or whole. From the conversation it is sent it plays:

1. no tool result yet: a tool call that writes `PROGRAM` to `<workdir>/<FILE_NAME>`, with the agent's own
   write tool if it offered one (found by name in `tools`: `Write`), else its shell tool (`Bash`,
   `exec_command`, `shell`);
2. one tool result: a shell tool call that runs the file;
3. two: a final text quoting the last tool result, which holds what the program printed (`EXPECTED_OUTPUT`,
   which the program computes, so it can only come from running it).

A request that offers neither tool (a title or summary side request) gets a short text (JSON when the
request asks for a JSON schema). With thinking/reasoning on (Messages `thinking`, Responses `reasoning.effort`,
Chat `reasoning_effort`) every turn starts with signed thinking / a reasoning item. Before answering, every
request is checked against the vendor's rules (`vendor_rules`); a violation is answered with the vendor's
400 and recorded in `violations`.
"""

from __future__ import annotations

import itertools
import json
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from tests.support import agent_wire as wire
from tests.support import vendor_rules as rules
from tests.support.fake_shapes import anthropic_error
from tests.support.fake_upstream import RecordedRequest, ServerThread, ThreadedServer, record

FILE_NAME = "modelport_task.py"
PROGRAM = 'print("modelport-" + str(6 * 7))\n'
EXPECTED_OUTPUT = "modelport-42"
WRITE_TOOLS = ("Write", "write_file")
SHELL_TOOLS = ("Bash", "exec_command", "shell", "shell_command", "run_command")


@dataclass(frozen=True)
class Violation:
    path: str
    error: rules.VendorError
    body: dict[str, Any]


@dataclass(frozen=True)
class Tool:
    name: str
    properties: dict[str, Any]


def _tools(proto: str, body: dict[str, Any]) -> dict[str, Tool]:
    found: dict[str, Tool] = {}
    for tool in body.get("tools") or []:
        if not isinstance(tool, dict):
            continue
        if proto == "chat":
            spec = tool.get("function") or {}
            name, schema = spec.get("name"), spec.get("parameters")
        elif proto == "messages":
            name, schema = tool.get("name"), tool.get("input_schema")
        else:
            name, schema = tool.get("name"), tool.get("parameters")
        if isinstance(name, str):
            found[name] = Tool(name, (schema or {}).get("properties") or {})
    return found


def _text_of(content: object) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return ""


def tool_results(proto: str, body: dict[str, Any]) -> list[str]:
    """The text of every tool result in the conversation, in order."""
    out: list[str] = []
    if proto == "messages":
        for message in body.get("messages") or []:
            for block in message.get("content") if isinstance(message.get("content"), list) else []:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    out.append(_text_of(block.get("content")))
    elif proto == "chat":
        out = [_text_of(m.get("content")) for m in body.get("messages") or [] if m.get("role") == "tool"]
    else:
        items = body.get("input")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, dict) and item.get("type") in ("function_call_output", "custom_tool_call_output"):
                out.append(_text_of(item.get("output")))
    return out


def thinking_on(proto: str, body: dict[str, Any]) -> bool:
    if proto == "messages":
        return rules.anthropic_thinking_on(body)
    if proto == "chat":
        return rules.chat_reasoning_on(body)
    return rules.responses_reasoning_on(body)


def _wants_json(body: dict[str, Any]) -> bool:
    formats = [
        (body.get("output_config") or {}).get("format"),
        body.get("output_format"),
        body.get("response_format"),
        (body.get("text") or {}).get("format"),
    ]
    return any(isinstance(f, dict) and f.get("type") == "json_schema" for f in formats)


class CodingTaskUpstream(ThreadedServer):
    def __init__(self, workdir: Path) -> None:
        self.workdir = workdir
        self.seal = rules.Seal()
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self._violations: list[Violation] = []
        self._ids = itertools.count(1)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_post("/{tail:.*}", self._handle)
        self._server = ServerThread(app, name="coding-task-upstream")

    @property
    def requests(self) -> list[RecordedRequest]:
        with self._lock:
            return list(self._requests)

    @property
    def violations(self) -> list[Violation]:
        with self._lock:
            return list(self._violations)

    def reset(self) -> None:
        with self._lock:
            self._requests.clear()
            self._violations.clear()

    # -- the script

    def _call(self, tool: Tool, arguments: dict[str, Any], reasoned: bool, proto: str) -> wire.Call:
        n = next(self._ids)
        # A Responses call id ending in `_r` was made with a reasoning item that must come back with it.
        call_id = f"toolu_mp{n:04d}" if proto == "messages" else f"call_mp{n:04d}" + ("_r" if reasoned else "")
        return wire.Call(call_id, tool.name, arguments)

    @staticmethod
    def _shell_arguments(tool: Tool, command: str) -> dict[str, Any]:
        if "cmd" in tool.properties:
            return {"cmd": command}
        if (tool.properties.get("command") or {}).get("type") == "array":
            return {"command": ["bash", "-lc", command]}
        arguments: dict[str, Any] = {"command": command}
        if "description" in tool.properties:
            arguments["description"] = "Run the task's command"
        return arguments

    def _plan(self, proto: str, body: dict[str, Any]) -> tuple[str, wire.Call | None, str]:
        """(text, call, thinking text) for this request."""
        tools = _tools(proto, body)
        write = next((tools[n] for n in WRITE_TOOLS if n in tools), None)
        shell = next((tools[n] for n in SHELL_TOOLS if n in tools), None)
        if shell is None and write is None:
            text = '{"title": "Write and run a program"}' if _wants_json(body) else "Write and run a program"
            return text, None, "A short answer is enough."
        path = self.workdir / FILE_NAME
        reasoned = (
            proto == "responses"
            and thinking_on(proto, body)
            and "reasoning.encrypted_content" in (body.get("include") or [])
        )
        results = tool_results(proto, body)
        if not results:
            if write is not None and "file_path" in write.properties:
                arguments: dict[str, Any] = {"file_path": str(path), "content": PROGRAM}
                return "", self._call(write, arguments, reasoned, proto), "I will write the program first."
            assert shell is not None
            command = f"printf '%s' '{PROGRAM}' > {path}"
            return "", self._call(shell, self._shell_arguments(shell, command), reasoned, proto), "Write it."
        if len(results) == 1 and shell is not None:
            command = f"python3 {path}"
            return "", self._call(shell, self._shell_arguments(shell, command), reasoned, proto), "Now run it."
        seen = results[-1].strip()[-400:]
        return f"Done. The program printed: {seen}", None, "I can report the output now."

    # -- serving

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        raw = await request.read()
        rec = record(request, raw)
        with self._lock:
            self._requests.append(rec)
        proto = next((p for s, p in _PATHS if request.path.endswith(s)), None)
        if proto is None:
            return web.json_response(
                {"error": {"message": "unknown path", "type": "invalid_request_error"}}, status=404
            )
        body = json.loads(raw)
        error = self._check(proto, body, rec.headers)
        if error is not None:
            with self._lock:
                self._violations.append(Violation(request.path, error, body))
            return self._error(proto, error)
        text, call, thinking = self._plan(proto, body)
        on = thinking_on(proto, body)
        token: str | None = None
        if on and proto == "messages":
            token = self.seal.sign({"thinking": thinking})
        elif on and proto == "responses" and "reasoning.encrypted_content" in (body.get("include") or []):
            token = self.seal.sign({"call_id": call.call_id if call else "", "summary": thinking})
        turn = wire.Turn(
            model=f"{body.get('model')}-20250101",  # vendors answer with a dated name, not the one asked for
            rid=f"mp{next(self._ids):04d}",
            text=text,
            call=call,
            thinking=thinking if on else None,
            thinking_token=token,
            input_tokens=max(1, len(raw) // 4),
        )
        if body.get("stream") is True:
            include_usage = bool((body.get("stream_options") or {}).get("include_usage"))
            events = (
                wire.anthropic_events(turn)
                if proto == "messages"
                else wire.chat_events(turn, include_usage)
                if proto == "chat"
                else wire.responses_events(turn)
            )
            response = web.StreamResponse(headers={"content-type": "text/event-stream; charset=utf-8"})
            await response.prepare(request)
            for event in events:
                await response.write(event)
            await response.write_eof()
            return response
        payload = (
            wire.anthropic_body(turn)
            if proto == "messages"
            else wire.chat_body(turn)
            if proto == "chat"
            else wire.responses_body(turn)
        )
        return web.json_response(payload)

    def _check(self, proto: str, body: dict[str, Any], headers: dict[str, str]) -> rules.VendorError | None:
        if proto == "messages":
            return rules.check_anthropic(body, headers, self.seal)
        if proto == "chat":
            return rules.check_chat(body)
        return rules.check_responses(body, self.seal)

    @staticmethod
    def _error(proto: str, error: rules.VendorError) -> web.Response:
        if proto == "messages":
            return web.json_response(anthropic_error(error.status, error.message, error.type), status=error.status)
        body = {"error": {"message": error.message, "type": error.type, "param": error.param, "code": error.code}}
        return web.json_response(body, status=error.status)


_PATHS = (("/messages", "messages"), ("/chat/completions", "chat"), ("/responses", "responses"))
