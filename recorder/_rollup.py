"""Per-model rollups, kept as the records are written (docs/redis-schema.md, "Rollups").

A batch notes which steps and which ops of a model its records touched; after the
batch's other writes, one script per model rebuilds those steps' entries in
``oi:{m:MID}:rollup:steps`` from what is now stored (the step hash, the step's ops
index, each op's hash). An entry is recomputed whole, never incremented, so a replayed
batch, or records of one op arriving from several processes in any order, leave the same
entry: the writes stay idempotent. The lifetime counters in ``oi:{m:MID}:rollup`` move
by the difference between a step's old entry and its new one, so they are idempotent
too. The recorder's hot path is unchanged: this is work for the flusher's pipeline, and
for Redis.

It goes by EVALSHA. A node that lost its script cache answers NOSCRIPT and ``_send``
sends the call again as EVAL, after the rest of the batch: the retention scripts behind
it go by EVALSHA too, so on such a node they failed as well and are re-sent after it, in
order. Only if another client loaded the trim script in between does the trim run
first; a step it deletes that this batch wrote to (one past the steps kept, so past the
rollup's 128 entries too) is then rebuilt from nothing, and the counters miss its ops.
"""

from __future__ import annotations

from openrl_inspect.recorder._scripts import model_prefix, sha
from openrl_inspect.state import keys, rollup

# Runs on the model's slot only (every key below shares its hash tag).
# KEYS[1] the model hash (its TTL, if any, is given to the rollup keys).
# ARGV: prefix, steps kept, ops per step, kind chars, #steps, steps..., op ids...
ROLLUP_TEMPLATE = """
local p = ARGV[1]
local keep = tonumber(ARGV[2])
local per_step = tonumber(ARGV[3])
local kind_chars = tonumber(ARGV[4])
local nsteps = tonumber(ARGV[5])
local seen, order = {}, {}
local function touch(s)
  if s and string.match(s, '^%d+$') and not seen[s] then
    seen[s] = true
    order[#order + 1] = s
  end
end
for i = 6, 5 + nsteps do touch(ARGV[i]) end
for i = 6 + nsteps, #ARGV do
  touch(redis.call('HGET', p .. ':op:' .. ARGV[i], 'step'))
end
local skey = p .. ':rollup:steps'
local rkey = p .. ':rollup'
local edges = {EDGES}
local function add(delta, k, v) delta[k] = (delta[k] or 0) + v end
-- An entry's finished ops, per kind: n, failed, duration sum and histogram bucket.
local function tally(list, sign, delta)
  for _, op in ipairs(list) do
    if op[8] then
      local kind = op[2] or '~long'
      add(delta, 'n:' .. kind, sign)
      if op[4] == 'failed' then add(delta, 'failed:' .. kind, sign) end
      local sta, fin = tonumber(op[7]), tonumber(op[8])
      if sta and fin then
        local d = fin - sta
        add(delta, 'dur:' .. kind, sign * d)
        local b = 0
        while b < #edges and d > edges[b + 1] do b = b + 1 end
        add(delta, 'h:' .. kind .. ':' .. b, sign)
      end
    end
  end
end
local fields = {'kind', 'step', 'status', 'accepted_at', 'enqueued_at', 'started_at',
                'finished_at', 'worker_id'}
-- Read once: only this script moves last_step, and it does so below.
local last = tonumber(redis.call('HGET', rkey, 'last_step') or '-1') or -1
for _, s in ipairs(order) do
  local stepkey = p .. ':step:' .. s
  local opskey = stepkey .. ':ops'
  local h = redis.call('HMGET', stepkey, 'started_at', 'finished_at')
  local ids = redis.call('ZRANGE', opskey, 0, per_step - 1)
  local ops = {}
  for j, o in ipairs(ids) do
    -- A missing op hash answers all false: the entry an absent op has, no EXISTS needed.
    local v = redis.call('HMGET', p .. ':op:' .. o, unpack(fields))
    local entry = {o, v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], 0}
    if v[3] == 'failed' then entry[10] = 1 end
    if v[1] and string.len(v[1]) > kind_chars then
      entry[2] = false
      entry[10] = 1
    end
    ops[j] = entry
  end
  -- A field read proves the step hash exists; a short page is the whole index.
  local e = (h[1] or h[2]) and 1 or redis.call('EXISTS', stepkey)
  local c = #ids
  if c >= per_step then c = redis.call('ZCARD', opskey) end
  -- The same constructor as ever: cjson writes the keys in the table's own order.
  local member = cjson.encode({n = s, s = h[1], f = h[2], e = e, c = c, o = ops})
  local old = redis.call('ZRANGE', skey, s, s, 'BYSCORE')
  -- Lifetime counters move by what the step's entry changed: a rebuild that changes
  -- nothing (a replayed batch) moves nothing.
  local delta = {}
  for _, m in ipairs(old) do tally(cjson.decode(m).o, -1, delta) end
  tally(ops, 1, delta)
  for k, v in pairs(delta) do
    if v ~= 0 then
      if string.sub(k, 1, 4) == 'dur:' then
        redis.call('HINCRBYFLOAT', rkey, k, v)
      else
        redis.call('HINCRBY', rkey, k, v)
      end
    end
  end
  if tonumber(s) > last then
    redis.call('HSET', rkey, 'last_step', s)
    last = tonumber(s)
  end
  if #old > 0 then redis.call('ZREMRANGEBYSCORE', skey, s, s) end
  redis.call('ZADD', skey, s, member)
end
redis.call('ZREMRANGEBYRANK', skey, 0, -keep - 1)
local ttl = redis.call('TTL', KEYS[1])
if ttl > 0 then
  redis.call('EXPIRE', skey, ttl)
  redis.call('EXPIRE', rkey, ttl)
end
return #order
"""

ROLLUP = ROLLUP_TEMPLATE.replace(
    "{EDGES}", "{" + ", ".join(repr(e) for e in rollup.BUCKET_EDGES_S) + "}"
)
ROLLUP_SHA = sha(ROLLUP)


def command(mid: str, steps: list[str], ops: list[str]) -> tuple[object, ...]:
    """The script call that refreshes ``steps`` and the steps of ``ops`` of model ``mid``."""
    return (
        "EVALSHA",
        ROLLUP_SHA,
        1,
        keys.model(mid),
        model_prefix(mid),
        rollup.STEPS,
        rollup.OPS_PER_STEP,
        rollup.KIND_CHARS,
        len(steps),
        *steps,
        *ops,
    )
