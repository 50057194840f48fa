"""The response cache in Redis: shared by every process and machine on the same Redis and prefix.

Keys (``<prefix>:rc:...``): ``e:<team>:<digest>`` an entry's bytes, expiring on its own at the entry's
end; ``lru`` a sorted set of ``<team>:<digest>`` by last use; ``sz`` each entry's size; ``tb`` bytes per
team; ``total`` bytes of all. Each operation is one Lua script, so processes never see the accounting half
done. An expired entry keeps counting until it is read or evicted (the oldest go first).
"""

from __future__ import annotations

from typing import Any

from redis.asyncio import Redis

from modelport.response_cache.store import Stored

# drop(member): forget one entry (its bytes, its place, its counts); returns 1 when it had not expired.
_DROP = """
local function drop(m)
  local s = tonumber(redis.call('HGET', KEYS[3], m) or '0')
  redis.call('HDEL', KEYS[3], m)
  redis.call('ZREM', KEYS[2], m)
  local team = string.match(m, '^(.-):')
  if s > 0 then
    redis.call('DECRBY', KEYS[5], s)
    redis.call('HINCRBY', KEYS[4], team, -s)
  end
  return redis.call('DEL', ARGV[1] .. m), team
end
"""
# KEYS: entry, lru, sz, tb, total. ARGV: entry key prefix, member, team, value, expires at (ms), now (ms),
# max bytes. Returns {team bytes, {evicted entries' teams}}.
_PUT = (
    _DROP
    + """
local member, team, value = ARGV[2], ARGV[3], ARGV[4]
if redis.call('HEXISTS', KEYS[3], member) == 1 then drop(member) end
local size = string.len(value)
redis.call('SET', KEYS[1], value)
redis.call('PEXPIREAT', KEYS[1], ARGV[5])
redis.call('ZADD', KEYS[2], ARGV[6], member)
redis.call('HSET', KEYS[3], member, size)
redis.call('HINCRBY', KEYS[4], team, size)
local total = redis.call('INCRBY', KEYS[5], size)
local max = tonumber(ARGV[7])
local evicted = {}
while total > max do
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0)
  if #oldest == 0 then break end
  local existed, owner = drop(oldest[1])
  if existed == 1 then table.insert(evicted, owner) end
  total = tonumber(redis.call('GET', KEYS[5]) or '0')
end
return {redis.call('HGET', KEYS[4], team) or '0', evicted}
"""
)
# KEYS: entry, lru, sz, tb, total. ARGV: entry key prefix, member, now (ms). The entry's bytes or nil.
_GET = (
    _DROP
    + """
local value = redis.call('GET', KEYS[1])
if value then
  redis.call('ZADD', KEYS[2], 'XX', ARGV[3], ARGV[2])
  return value
end
if redis.call('HEXISTS', KEYS[3], ARGV[2]) == 1 then drop(ARGV[2]) end
return false
"""
)
# KEYS: (unused), lru, sz, tb, total. ARGV: entry key prefix, members... Returns how many were there.
_DROP_MANY = (
    _DROP
    + """
local gone = 0
for i = 2, #ARGV do
  if redis.call('HEXISTS', KEYS[3], ARGV[i]) == 1 then
    drop(ARGV[i])
    gone = gone + 1
  end
end
return gone
"""
)
_PURGE_BATCH = 500


class RedisStore:
    shared = True

    def __init__(self, redis: Redis, prefix: str, max_bytes: int) -> None:
        self._redis = redis
        ns = f"{prefix.rstrip(':')}:rc"
        self._entry_prefix = f"{ns}:e:"
        self._lru, self._sizes, self._teams, self._total = f"{ns}:lru", f"{ns}:sz", f"{ns}:tb", f"{ns}:total"
        self._max_bytes = max_bytes
        self._put = redis.register_script(_PUT)
        self._get = redis.register_script(_GET)
        self._drop_many = redis.register_script(_DROP_MANY)

    def _keys(self, member: str) -> list[str]:
        return [self._entry_prefix + member, self._lru, self._sizes, self._teams, self._total]

    async def get(self, team_id: str, digest: str, now_ms: int) -> bytes | None:
        member = f"{team_id}:{digest}"
        value: Any = await self._get(keys=self._keys(member), args=[self._entry_prefix, member, now_ms])
        return None if value is None else bytes(value)

    async def put(self, team_id: str, digest: str, value: bytes, expires_at_ms: int, now_ms: int) -> Stored:
        member = f"{team_id}:{digest}"
        args: list[str | bytes | int] = [self._entry_prefix, member, team_id, value]
        args += [expires_at_ms, now_ms, self._max_bytes]
        reply: Any = await self._put(keys=self._keys(member), args=args)
        team_bytes, evicted = reply
        return Stored(evicted=[_text(t) for t in evicted], team_bytes=int(team_bytes))

    async def purge(self, team_id: str) -> int:
        members = [_text(m) async for m, _ in self._redis.zscan_iter(self._lru, match=f"{team_id}:*")]
        gone = 0
        for start in range(0, len(members), _PURGE_BATCH):
            batch = members[start : start + _PURGE_BATCH]
            gone += int(await self._drop_many(keys=self._keys(""), args=[self._entry_prefix, *batch]))
        return gone

    async def team_bytes(self, team_id: str) -> int:
        value = await self._redis.hget(self._teams, team_id)
        return int(value or 0)

    async def aclose(self) -> None:
        pass  # the Redis client is the container's


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
