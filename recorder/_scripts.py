"""Server-side retention: Lua scripts that trim a model's steps and expire an ended model.

Each runs on the model's slot only: every key it touches shares the model's hash tag.

The recorder sends every script by ``EVALSHA`` (``sha``): ``EVAL`` makes Redis hash the
whole body on every call, and the rollup script's is some 3 KB, sent once per model per
batch. A node whose script cache is empty (a restart, a failover; each cluster node has
its own) answers ``NOSCRIPT``, and ``_send`` sends that command again as ``EVAL`` with
the body found here (``body``).
"""

from __future__ import annotations

import hashlib

from openrl_inspect.state import keys

# SHA1 (hex) -> body of every script ``sha`` was asked about, for the EVAL fallback.
_BODIES: dict[str, str] = {}
_SHAS: dict[str, str] = {}


def sha(script: str) -> str:
    """The SHA1 Redis knows ``script`` by (remembered, so ``body`` can give it back)."""
    h = _SHAS.get(script)
    if h is None:
        h = hashlib.sha1(script.encode()).hexdigest()
        _BODIES[h] = script
        _SHAS[script] = h
    return h


def body(script_sha: str) -> str:
    """The script ``sha`` returned ``script_sha`` for."""
    return _BODIES[script_sha]


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

# The schema version, and with it on a fresh store the model indexes' version: set
# together, so the indexes are declared complete only where no writer came before.
# KEYS: schema version, indexes version (one slot: see ``keys.INDEXES_KEY``).
DECLARE_SCHEMA = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX') then
  redis.call('SET', KEYS[2], ARGV[2])
  return 1
end
return 0
"""

# Known from import on, in whichever process sends them.
sha(TRIM_STEPS)
sha(EXPIRE_MODEL)
