"""The tracing helpers with the SDK's in-memory exporter, and proof that tracing off imports nothing of
opentelemetry (the whole package imported, the services built)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from modelport import tracing
from modelport.settings import TracingSettings

TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT = "00f067aa0ba902b7"


@pytest.fixture
def memory(tmp_path: Path) -> Iterator[InMemorySpanExporter]:
    handle = tracing.setup(TracingSettings(enabled=True, exporter="file", file=tmp_path / "spans.jsonl"))
    assert handle is not None and tracing._otel is not None
    exporter = InMemorySpanExporter()
    tracing._otel.provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield exporter
    asyncio.run(handle.aclose())
    assert not tracing.on()


@pytest.mark.parametrize(
    ("value", "valid"),
    [
        (f"00-{TRACE}-{PARENT}-01", True),
        (f" 00-{TRACE.upper()}-{PARENT}-00 ", True),
        (f"00-{'0' * 32}-{PARENT}-01", False),  # all-zero ids are invalid
        (f"00-{TRACE}-{'0' * 16}-01", False),
        (f"ff-{TRACE}-{PARENT}-01", False),  # version ff is forbidden
        (f"00-{TRACE}-{PARENT}", False),
        ("00-xyz", False),
        (None, False),
    ],
)
def test_valid_traceparent(value: str | None, valid: bool) -> None:
    assert (tracing.valid_traceparent(value) is not None) is valid


def test_off_passes_the_client_traceparent_on_unchanged() -> None:
    assert not tracing.on() and tracing.start("x") is None and tracing.current() is None
    headers: dict[str, str] = {}
    tracing.inject(None, headers, {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "a=b"})
    assert headers == {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "a=b"}
    headers = {}
    tracing.inject(None, headers, {"traceparent": "garbage", "tracestate": "a=b"})
    assert headers == {}
    assert tracing.current_traceparent(f"00-{TRACE}-{PARENT}-01") == f"00-{TRACE}-{PARENT}-01"
    tracing.end(None)  # no-op


def test_spans_continue_the_client_trace(memory: InMemorySpanExporter) -> None:
    server = tracing.start("POST /x", parent=tracing.extract([(b"traceparent", f"00-{TRACE}-{PARENT}-01".encode())]))
    token = tracing.attach(server)
    try:
        parent = tracing.current()
        child = tracing.start("upstream", {"a": 1}, parent=parent, kind="CLIENT")
        headers: dict[str, str] = {}
        tracing.inject(child, headers, {"traceparent": "ignored when tracing is on"})
        stored = tracing.current_traceparent("ignored as well")
        current: dict[str, str] = {}
        tracing.inject(None, current, {})  # no span of its own: the current one (count_tokens' upstream call)
        tracing.end(child, {"b": 2}, error="HTTP 503")
    finally:
        tracing.detach(token)
    tracing.end(server)
    later = tracing.start("media task", parent=tracing.from_traceparent(stored), kind="CONSUMER")
    tracing.end(later)

    spans = {s.name: s for s in memory.get_finished_spans()}
    assert set(spans) == {"POST /x", "upstream", "media task"}
    assert all(s.context.trace_id == int(TRACE, 16) for s in spans.values())
    assert spans["POST /x"].parent is not None and spans["POST /x"].parent.span_id == int(PARENT, 16)
    server_id = spans["POST /x"].context.span_id
    assert spans["upstream"].parent is not None and spans["upstream"].parent.span_id == server_id
    assert spans["media task"].parent is not None and spans["media task"].parent.span_id == server_id
    assert dict(spans["upstream"].attributes or {}) == {"a": 1, "b": 2}
    assert spans["upstream"].status.description == "HTTP 503"
    assert headers["traceparent"] == f"00-{TRACE}-{spans['upstream'].context.span_id:016x}-01"
    assert stored == current["traceparent"] == f"00-{TRACE}-{server_id:016x}-01"


def test_tracing_off_imports_no_opentelemetry(tmp_path: Path) -> None:
    """No module of ours imports opentelemetry while tracing is off: the whole package is imported and the
    services built with an import hook that records who asks for opentelemetry. (Dependencies may load it
    on their own when it is installed: FastAPI's native telemetry needs opentelemetry-api, redis-py probes
    for the SDK; neither records anything without a configured provider.)"""
    code = f"""
import importlib, pkgutil, sys
from pathlib import Path
import modelport
ours = str(Path(modelport.__file__).parent)
culprits = []

class Watch:
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "opentelemetry":
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
                frame = frame.f_back
            if frame is not None and frame.f_code.co_filename.startswith(ours):
                culprits.append((name, frame.f_code.co_filename, frame.f_lineno))
        return None

sys.meta_path.insert(0, Watch())
for info in pkgutil.walk_packages(modelport.__path__, "modelport."):
    if ".migrations." in info.name or info.name.endswith("__main__"):
        continue
    importlib.import_module(info.name)
from modelport.apps.assemble import build_services
from modelport.settings import Settings
build_services(Settings(data_dir={str(tmp_path)!r}))
assert not culprits, culprits
from modelport import tracing
assert not tracing.on()
print("ok")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


def test_the_import_watch_can_fail(tmp_path: Path) -> None:
    """The same watch catches our own import of opentelemetry: tracing turned on."""
    code = f"""
import sys
from pathlib import Path
import modelport
ours = str(Path(modelport.__file__).parent)
culprits = []

class Watch:
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] == "opentelemetry":
            frame = sys._getframe(1)
            while frame is not None and frame.f_code.co_filename.startswith("<frozen"):
                frame = frame.f_back
            if frame is not None and frame.f_code.co_filename.startswith(ours):
                culprits.append(name)
        return None

sys.meta_path.insert(0, Watch())
from modelport import tracing
from modelport.settings import TracingSettings
tracing.setup(TracingSettings(enabled=True, exporter="file", file={str(tmp_path / "s.jsonl")!r}))
print(len(culprits))
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout.strip()) > 0
