"""Latency metrics of one answered upstream call, recorded once when the request ends.

- upstream duration: the answered call, from sending it to the end of its answer (a stream's last chunk);
- time to first token (streams): from sending it to the first event carrying output, not the first byte
  (headers and an empty role chunk arrive before the model has produced anything);
- the gateway's overhead: the time the request spent in the gateway rather than waiting on an upstream:
  arrival to the answered call's send (auth, validation, limits, the hold, routing, building the body; the
  time spent on failed attempts before it is upstream time and left out), plus, for a whole body, the
  time from the upstream's last byte to our answer, or for a stream, the relay's work on each chunk.
"""

from __future__ import annotations

import time

from modelport.gateway.context import Outcome, RequestContext, Timings
from modelport.metrics import GATEWAY_OVERHEAD, UPSTREAM_DURATION, UPSTREAM_TTFT, deployment_labels, enabled

_PATH = {True: "fast", False: "translated"}
_STREAM = {True: "true", False: "false"}


def record_call(ctx: RequestContext, outcome: Outcome, timings: Timings) -> None:
    if not timings.upstream_sent or outcome.deployment is None or not enabled():
        return  # refused or failed before an upstream answered, or metrics off
    ended = time.perf_counter()
    labels = deployment_labels(outcome.deployment)
    done = timings.upstream_done or ended
    UPSTREAM_DURATION.labels(*labels).observe(done - timings.upstream_sent)
    if ctx.stream and timings.first_output:
        UPSTREAM_TTFT.labels(*labels).observe(timings.first_output - timings.upstream_sent)
    before = timings.upstream_sent - timings.arrived - timings.upstream_waited if timings.arrived else 0.0
    after = timings.relay_seconds if ctx.stream else ended - done
    GATEWAY_OVERHEAD.labels(_PATH[outcome.fast], _STREAM[ctx.stream]).observe(max(0.0, before + after))
