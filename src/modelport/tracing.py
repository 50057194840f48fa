"""OpenTelemetry tracing: the optional extra `modelport[otel]`, off by default (`MODELPORT_TRACING__ENABLED`).

Off, nothing of opentelemetry is imported and every helper here returns at once (`start` returns None,
`end(None)` does nothing). On, `setup` (called by `build_services`, once per process) installs a tracer
provider with the configured exporter, and:

- the HTTP middleware (`web/http_tracing.py`) starts a server span per request, continuing the client's
  W3C `traceparent` (and `tracestate`) when it sent one;
- the text gateway adds child spans: `admission` (limits and the balance hold), one `upstream` span per
  deployment attempt (its `traceparent` is sent to the upstream, so the upstream's own spans join the
  trace) and `settlement`;
- a media task keeps the `traceparent` of the request that created it in its row, and the worker that runs
  it (any process, any machine) starts its `media task` span under it.

With tracing off, a client's `traceparent` is still passed on unchanged to the upstream and kept with a
media task, so a trace started by the client stays whole across our hop even though we record nothing.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Mapping, MutableMapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from modelport.settings import TracingSettings

log = logging.getLogger("modelport.tracing")
TRACEPARENT = "traceparent"
TRACESTATE = "tracestate"
_TRACEPARENT_RE = re.compile(r"^[0-9a-f]{2}-(?!0{32})[0-9a-f]{32}-(?!0{16})[0-9a-f]{16}-[0-9a-f]{2}$")

# opentelemetry's modules and our tracer, set by `setup` when tracing is on.
_otel: _Otel | None = None


class TracingUnavailable(RuntimeError):
    """Tracing is enabled but the `otel` extra is not installed."""


def valid_traceparent(value: str | None) -> str | None:
    """A W3C `traceparent` header as given, if it is well formed (version ff is invalid); else None."""
    if value is None:
        return None
    value = value.strip().lower()
    if len(value) != 55 or not _TRACEPARENT_RE.match(value) or value.startswith("ff"):
        return None
    return value


def on() -> bool:
    return _otel is not None


def setup(settings: TracingSettings) -> Tracing | None:
    """Install the tracer provider of this process (None when tracing is off)."""
    global _otel
    if not settings.enabled:
        return None
    if _otel is None:
        _otel = _Otel(settings)
    return Tracing()


class Tracing:
    """The service-container handle: flushes the spans still queued when the process stops."""

    async def aclose(self) -> None:
        global _otel
        if _otel is not None:
            _otel.provider.shutdown()
            _otel = None


def current() -> Any:
    """The current trace context (to parent spans started later, in another task); None when off."""
    return None if _otel is None else _otel.context.get_current()


def start(name: str, attributes: Mapping[str, Any] | None = None, *, parent: Any = None, kind: str = "INTERNAL") -> Any:
    """Start a span (not made current) under `parent` (a context from `current()` or `from_traceparent`,
    else the current one); None when tracing is off."""
    if _otel is None:
        return None
    return _otel.tracer.start_span(
        name, context=parent, kind=getattr(_otel.trace.SpanKind, kind), attributes=dict(attributes or {})
    )


def end(span: Any, attributes: Mapping[str, Any] | None = None, *, error: str | None = None) -> None:
    if span is None:
        return
    if attributes:
        span.set_attributes(dict(attributes))
    if error is not None and _otel is not None:
        span.set_status(_otel.trace.Status(_otel.trace.StatusCode.ERROR, error))
    span.end()


def current_traceparent(client: str | None = None) -> str | None:
    """The `traceparent` to keep with work done later elsewhere (a media task): the current span's when
    tracing is on, else the client's as it came (when well formed)."""
    if _otel is None:
        return valid_traceparent(client)
    carrier: dict[str, str] = {}
    _otel.propagator.inject(carrier)
    return carrier.get(TRACEPARENT)


def inject(span: Any, headers: MutableMapping[str, str], client: Mapping[str, str]) -> None:
    """Headers for an outgoing call: `span`'s trace context (or the current one) when tracing is on, else
    the client's `traceparent`/`tracestate` passed on unchanged (when well formed)."""
    if _otel is not None:
        context = _otel.trace.set_span_in_context(span) if span is not None else None
        _otel.propagator.inject(headers, context=context)
        return
    parent = valid_traceparent(client.get(TRACEPARENT))
    if parent is not None:
        headers[TRACEPARENT] = parent
        state = client.get(TRACESTATE)
        if state:
            headers[TRACESTATE] = state


def from_traceparent(value: str | None) -> Any:
    """A parent context from a stored `traceparent` (None when off or absent: a new trace)."""
    if _otel is None or not value:
        return None
    return _otel.propagator.extract({TRACEPARENT: value})


def extract(headers: Sequence[tuple[bytes, bytes]]) -> Any:
    """The parent context of an incoming request, from its raw ASGI headers."""
    assert _otel is not None
    carrier: dict[str, str] = {}
    for name, value in headers:
        if name in (b"traceparent", b"tracestate"):
            carrier[name.decode()] = value.decode("latin-1")
    return _otel.propagator.extract(carrier) if carrier else None


def attach(span: Any) -> object:
    """Make `span` current in this task (its children find it); returns the token for `detach`."""
    assert _otel is not None
    return _otel.context.attach(_otel.trace.set_span_in_context(span))


def detach(token: object) -> None:
    if _otel is not None:
        _otel.context.detach(token)


class _Otel:
    """The opentelemetry modules, imported only here, and this process's provider and tracer."""

    def __init__(self, settings: TracingSettings) -> None:
        try:
            from opentelemetry import context, trace
            from opentelemetry.sdk.resources import Resource
            from opentelemetry.sdk.trace import TracerProvider
            from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SimpleSpanProcessor
            from opentelemetry.sdk.trace.sampling import ParentBased, TraceIdRatioBased
            from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator
        except ImportError as exc:
            raise TracingUnavailable(
                "MODELPORT_TRACING__ENABLED needs the otel extra: pip install 'modelport[otel]'"
            ) from exc
        self.trace = trace
        self.context = context
        self.propagator = TraceContextTextMapPropagator()
        self.provider = TracerProvider(
            resource=Resource.create({"service.name": settings.service_name}),
            sampler=ParentBased(TraceIdRatioBased(settings.sample_ratio)),
        )
        if settings.exporter == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            self.provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
        elif settings.exporter == "console":
            self.provider.add_span_processor(SimpleSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        else:
            assert settings.file is not None
            self.provider.add_span_processor(SimpleSpanProcessor(_file_exporter(settings.file)))
        # Our own provider, not the global one: embedding code keeps whatever it installed.
        self.tracer = self.provider.get_tracer("modelport")


def _file_exporter(path: Path) -> Any:
    """Spans as JSON lines appended to `path` (one `write` per span, so several processes may share it)."""
    from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

    class FileSpanExporter(SpanExporter):
        def export(self, spans: Any) -> SpanExportResult:
            lines = "".join(span.to_json(indent=None) + "\n" for span in spans)
            with path.open("a", encoding="utf-8") as out:
                out.write(lines)
            return SpanExportResult.SUCCESS

    path.parent.mkdir(parents=True, exist_ok=True)
    return FileSpanExporter()
