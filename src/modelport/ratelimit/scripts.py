"""Lua scripts of the Redis limiter store; each runs atomically on the server.

Clock: every script takes "now" as ARGV[1] in integer microseconds, or an empty string to read the Redis
server's `TIME`. Production passes nothing, so every gateway process on every machine uses the one clock
of the Redis server that owns the key: client clock skew cannot loosen or tighten a limit. Tests pass a
fake clock to move time by hand. (Redis >= 5 replicates script effects, which makes `TIME` in a writing
script safe.)

Numbers go to `redis.call` as Lua numbers, never through `tostring` (which keeps only 14 digits);
microsecond timestamps (~1.7e15) are exact in Lua's doubles. Key expiry is always relative (PEXPIRE /
PX), so it is right under either clock.
"""

from __future__ import annotations

_NOW = """
local now
if ARGV[1] == '' then
  local t = redis.call('TIME')
  now = tonumber(t[1]) * 1000000 + tonumber(t[2])
else
  now = tonumber(ARGV[1])
end
"""

# KEYS[1] GCRA hash {t = TAT µs, i = emission interval µs}. ARGV: now_us|'', limit (>= 1), window_us,
# cost (>= 0). Returns {allowed 0/1, remaining, reset_us, retry_us}. Mirrors gcra.step().
GCRA_LUA = (
    _NOW
    + """
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local cost = tonumber(ARGV[4])
local interval = math.max(1, math.floor(window / limit))
local capacity = limit * interval
local tat = now
local state = redis.call('HMGET', KEYS[1], 't', 'i')
local old_tat = tonumber(state[1])
local old_interval = tonumber(state[2])
if old_tat and old_interval and old_tat > now then
  local debt = old_tat - now
  if old_interval ~= interval then
    -- exact while debt * interval < 2^53 (windows up to ~90 s); beyond, off by ~1 µs at most
    debt = math.floor(debt * interval / old_interval)
  end
  tat = now + debt
end
local new_tat = tat + cost * interval
if new_tat - now > capacity then
  local remaining = math.floor((capacity - (tat - now)) / interval)
  if remaining < 0 then remaining = 0 end
  return {0, remaining, tat, new_tat - capacity - now}
end
if cost > 0 then
  redis.call('HSET', KEYS[1], 't', new_tat, 'i', interval)
  redis.call('PEXPIRE', KEYS[1], math.ceil((new_tat - now) / 1000))
end
return {1, math.floor((capacity - (new_tat - now)) / interval), new_tat, 0}
"""
)

# KEYS[1] GCRA hash. ARGV: now_us|'', limit (>= 1), window_us, delta (may be negative). Counts delta units
# with no decision. Mirrors gcra.adjusted().
GCRA_ADJUST_LUA = (
    _NOW
    + """
local limit = tonumber(ARGV[2])
local window = tonumber(ARGV[3])
local delta = tonumber(ARGV[4])
local interval = math.max(1, math.floor(window / limit))
local tat = now
local state = redis.call('HMGET', KEYS[1], 't', 'i')
local old_tat = tonumber(state[1])
local old_interval = tonumber(state[2])
if old_tat and old_interval and old_tat > now then
  local debt = old_tat - now
  if old_interval ~= interval then
    debt = math.floor(debt * interval / old_interval)
  end
  tat = now + debt
end
tat = tat + delta * interval
if tat <= now then
  redis.call('DEL', KEYS[1])
  return 0
end
redis.call('HSET', KEYS[1], 't', tat, 'i', interval)
redis.call('PEXPIRE', KEYS[1], math.ceil((tat - now) / 1000))
return 1
"""
)

# Leases live in a sorted set: member = lease id, score = expiry in µs. Expired members are pruned before
# counting, so a lease whose process died frees its slot at expiry. The key itself expires with its
# longest lease, so an abandoned key disappears too.
_PRUNE = """
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
"""

_EXPIRE_WITH_LAST = """
local last = redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')
if last[2] then
  redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil((tonumber(last[2]) - now) / 1000)))
end
"""

# KEYS[1] lease set. ARGV: now_us|'', limit, ttl_us, lease_id. Returns expiry_us, or 0 when full.
LEASE_ACQUIRE_LUA = (
    _NOW
    + _PRUNE
    + """
local limit = tonumber(ARGV[2])
if redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
local expires = now + tonumber(ARGV[3])
redis.call('ZADD', KEYS[1], expires, ARGV[4])
"""
    + _EXPIRE_WITH_LAST
    + """
return expires
"""
)

# KEYS[1] lease set. ARGV: now_us|'', ttl_us, lease_id. Returns the new expiry_us, or 0 if the lease is gone.
LEASE_RENEW_LUA = (
    _NOW
    + _PRUNE
    + """
if not redis.call('ZSCORE', KEYS[1], ARGV[3]) then return 0 end
local expires = now + tonumber(ARGV[2])
redis.call('ZADD', KEYS[1], 'XX', expires, ARGV[3])
"""
    + _EXPIRE_WITH_LAST
    + """
return expires
"""
)
