"""What a key with every limit set adds to a text request's admission, measured in-process (issue 24).

    .venv/bin/python bench/key_limits_cost.py [--n 200000]

The whole-gateway bench (`gateway_bench.py --limited-key`) cannot resolve 0.05 ms per request on a shared
machine (its CPU per request moves by more between runs), so this times exactly the work the limits add
on the hot path, with the in-process limiters: the expiry and address check, the model patterns (checked
twice: the model lookup and admission), the key's RPM and TPM hits, the TPM correction at the end
(gathered per limiter key, applied once per 50 ms), and the key's spend period for its reservation. The
reservation itself is the team's mechanism (one locked write per many requests), not per-request work.
"""

from __future__ import annotations

import argparse
import asyncio
import ipaddress
import time

from modelport.accounts.auth import AuthContext
from modelport.accounts.limits import KeyLimits
from modelport.billing.key_budget import key_hold
from modelport.clock import now_ms
from modelport.ratelimit import MemoryRateLimiter

LIMITS = KeyLimits(
    spend_limit_micros=10**11,
    spend_limit_period="month",
    models=("bench/*",),
    rpm=10**8,
    tpm=10**9,
    expires_at_ms=4_070_908_800_000,
    allowed_ips=(ipaddress.ip_network("127.0.0.0/8"),),
)
AUTH = AuthContext("key_1", "mp-", "team_1", "demo", "free", limits=LIMITS)


async def per_request(limiter: MemoryRateLimiter, pending: dict[str, list[int]]) -> None:
    assert AUTH.refusal(now_ms(), "127.0.0.1") is None
    assert AUTH.may_use("bench/fast") and AUTH.may_use("bench/fast")
    assert (await limiter.hit("key:key_1:rpm", 10**8)).allowed
    assert (await limiter.hit("key:key_1:tpm", 10**9, 60, 24)).allowed
    assert key_hold("key_1", LIMITS, now_ms()) is not None
    correction = pending.get("key:key_1:tpm")  # as Metering gathers them (applied once per 50 ms)
    if correction is None:
        pending["key:key_1:tpm"] = [10**9, -8]
    else:
        correction[1] -= 8


async def main(n: int) -> None:
    limiter = MemoryRateLimiter()
    pending: dict[str, list[int]] = {}
    for _ in range(2000):
        await per_request(limiter, pending)
    await asyncio.sleep(0)
    best = float("inf")
    for _ in range(5):
        started = time.process_time()
        for _ in range(n):
            await per_request(limiter, pending)
        await asyncio.sleep(0)
        best = min(best, (time.process_time() - started) / n)
    print(f"added CPU per request with every key limit set: {best * 1e6:.1f} us (best of 5 x {n})")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=100_000)
    asyncio.run(main(parser.parse_args().n))
