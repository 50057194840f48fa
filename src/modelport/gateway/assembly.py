"""Builds the text gateway's long-lived parts for one process and ties them to the runtime's lifecycle."""

from __future__ import annotations

from modelport.gateway.accounting import Accounting, NoAccounting
from modelport.gateway.pipeline import TextGateway
from modelport.gateway.routing import DeploymentRouter
from modelport.gateway.upstream_call import UpstreamCaller
from modelport.runtime import Runtime
from modelport.upstreams.pool import UpstreamPool


def build_gateway(runtime: Runtime, accounting: Accounting | None = None) -> TextGateway:
    pool = UpstreamPool()
    runtime.on_shutdown(pool.close)
    caller = UpstreamCaller(pool, DeploymentRouter())
    return TextGateway(runtime, caller, accounting or NoAccounting())
