"""Logs: readable lines on a terminal, JSON otherwise; MODELPORT_LOG_JSON (`json_lines`) forces either."""

from __future__ import annotations

import io
import json
import logging
import sys
from collections.abc import Iterator

import pytest

from modelport.logs import configure_logging


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.fixture(autouse=True)
def restore_root_logger() -> Iterator[None]:
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def emit(stream: io.StringIO, monkeypatch: pytest.MonkeyPatch, json_lines: bool | None) -> str:
    monkeypatch.setattr(sys, "stderr", stream)
    configure_logging("INFO", json_lines=json_lines)
    logging.getLogger("modelport.access").info("request", extra={"method": "POST", "status": 200})
    return stream.getvalue().strip()


def test_a_terminal_gets_readable_lines(monkeypatch: pytest.MonkeyPatch) -> None:
    line = emit(Terminal(), monkeypatch, None)
    assert not line.startswith("{")
    assert "INFO  modelport.access request method=POST status=200" in line


def test_anything_else_gets_json(monkeypatch: pytest.MonkeyPatch) -> None:
    record = json.loads(emit(io.StringIO(), monkeypatch, None))
    assert record["msg"] == "request" and record["method"] == "POST" and record["status"] == 200


def test_the_setting_forces_either(monkeypatch: pytest.MonkeyPatch) -> None:
    assert json.loads(emit(Terminal(), monkeypatch, True))["logger"] == "modelport.access"
    assert "request method=POST" in emit(io.StringIO(), monkeypatch, False)
