"""Server-side retention: Lua scripts that trim a model's steps and expire an ended model.

Each runs on the model's slot only: every key it touches shares the model's hash tag.
"""

from __future__ import annotations

from openrl_inspect.state import keys


def model_prefix(mid: str) -> str:
    """The prefix every key of model ``mid`` starts with (its hash tag included)."""
    return keys.model(mid).removesuffix(":model")


# Runs on the model's slot only (every key below shares its hash tag).
TRIM_STEPS = """
local p = ARGV[2]
local n = redis.call('ZCARD', KEYS[1])
local cap = tonumber(ARGV[1])
if n <= cap then return 0 end
local old = redis.call('ZRANGE', KEYS[1], 0, n - cap - 1)
for _, s in ipairs(old) do
  local opskey = p .. ':step:' .. s .. ':ops'
  for _, o in ipairs(redis.call('ZRANGE', opskey, 0, -1)) do
    redis.call('DEL', p .. ':op:' .. o)
    redis.call('ZREM', p .. ':ops:open', o)
  end
  redis.call('DEL', opskey, p .. ':step:' .. s)
end
redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - cap - 1)
return #old
"""

EXPIRE_MODEL = """
local p = ARGV[2]
local ttl = ARGV[1]
for _, s in ipairs(redis.call('ZRANGE', p .. ':steps', 0, -1)) do
  local opskey = p .. ':step:' .. s .. ':ops'
  for _, o in ipairs(redis.call('ZRANGE', opskey, 0, -1)) do
    redis.call('EXPIRE', p .. ':op:' .. o, ttl)
  end
  redis.call('EXPIRE', opskey, ttl)
  redis.call('EXPIRE', p .. ':step:' .. s, ttl)
end
for _, pl in ipairs(redis.call('ZRANGE', p .. ':placements', 0, -1)) do
  redis.call('EXPIRE', p .. ':placement:' .. pl, ttl)
end
for _, k in ipairs({':steps', ':ops:open', ':workers', ':placements', ':logs',
                    ':sampler:batches', ':rollup', ':rollup:steps'}) do
  redis.call('EXPIRE', p .. k, ttl)
end
redis.call('EXPIRE', KEYS[1], ttl)
return 1
"""
