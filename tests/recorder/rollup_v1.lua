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
for _, s in ipairs(order) do
  local stepkey = p .. ':step:' .. s
  local opskey = stepkey .. ':ops'
  local h = redis.call('HMGET', stepkey, 'started_at', 'finished_at')
  local ops = {}
  for j, o in ipairs(redis.call('ZRANGE', opskey, 0, per_step - 1)) do
    local opkey = p .. ':op:' .. o
    local entry = {o, false, false, false, false, false, false, false, false, 0}
    if redis.call('EXISTS', opkey) == 1 then
      local v = redis.call('HMGET', opkey, unpack(fields))
      for k = 1, 8 do entry[k + 1] = v[k] end
      if v[3] == 'failed' then entry[10] = 1 end
      if v[1] and string.len(v[1]) > kind_chars then
        entry[2] = false
        entry[10] = 1
      end
    end
    ops[j] = entry
  end
  local member = cjson.encode({n = s, s = h[1], f = h[2],
                               e = redis.call('EXISTS', stepkey),
                               c = redis.call('ZCARD', opskey), o = ops})
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
  local last = tonumber(redis.call('HGET', rkey, 'last_step') or '-1') or -1
  if tonumber(s) > last then redis.call('HSET', rkey, 'last_step', s) end
  redis.call('ZREMRANGEBYSCORE', skey, s, s)
  redis.call('ZADD', skey, s, member)
end
redis.call('ZREMRANGEBYRANK', skey, 0, -keep - 1)
local ttl = redis.call('TTL', KEYS[1])
if ttl > 0 then
  redis.call('EXPIRE', skey, ttl)
  redis.call('EXPIRE', rkey, ttl)
end
return #order
