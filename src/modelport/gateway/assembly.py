"""Builds the text gateway's long-lived parts for one process and ties them to the runtime's lifecycle."""

from __future__ import annotations

from modelport.billing.credit import CreditBook
from modelport.billing.settlement import SettlementWriter
from modelport.gateway.accounting import Accounting
from modelport.gateway.logsink import RequestLogSink
from modelport.gateway.metering import Metering
from modelport.gateway.pipeline import TextGateway
from modelport.gateway.routing import DeploymentRouter
from modelport.gateway.upstream_call import UpstreamCaller
from modelport.requestlog.writer import RequestLogWriter
from modelport.runtime import Runtime
from modelport.upstreams.pool import UpstreamPool


def build_gateway(runtime: Runtime, accounting: Accounting | None = None) -> TextGateway:
    pool = UpstreamPool()
    runtime.on_shutdown(pool.close)
    caller = UpstreamCaller(pool, DeploymentRouter())
    return TextGateway(runtime, caller, accounting or build_metering(runtime))


def build_metering(runtime: Runtime) -> Metering:
    settlements = SettlementWriter(runtime.db)
    log_writer = RequestLogWriter(runtime.db, spill_dir=runtime.settings.data_dir / "spill" / "request_logs")
    log_sink = RequestLogSink(log_writer, max_payload_bytes=runtime.settings.log_payload_max_bytes)
    credit = CreditBook(runtime.db, settlements)
    metering = Metering(runtime.settings, runtime.db, runtime.limiters, credit, log_sink=log_sink)
    runtime.on_startup(settlements.start)
    runtime.on_startup(log_writer.start)
    runtime.on_startup(credit.start)
    # Shutdown hooks run in reverse: leases are released, unused credit is returned, then the last log rows
    # and settlements are written.
    runtime.on_shutdown(settlements.close)
    runtime.on_shutdown(log_writer.close)
    runtime.on_shutdown(credit.close)
    runtime.on_shutdown(metering.drain)
    return metering
