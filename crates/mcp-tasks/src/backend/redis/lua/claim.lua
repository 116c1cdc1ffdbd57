-- ARGV: prefix, worker, max, lease_ms, claim id. Takes up to `max` runs, lowest start tag
-- first (fair across callers), and claims each (a new fence, one more attempt, a lease) in
-- the same atomic step. The runs handed out are remembered under the claim id for a lease:
-- the same claim id again (a retry after a lost reply) hands out the same runs, not new
-- ones. Returns {runs, last}: each run is
-- {id, fence, attempt, owner, tool, version, args, ctx, round, request_state, {tool key, answer, ...}};
-- `last` (when nothing was claimed) is the newest wake-up id, for a blocking wait after it.
local worker = ARGV[2]
local max = tonumber(ARGV[3])
local lease = tonumber(ARGV[4])
local ck = P .. ':cl:' .. ARGV[5]
local now = now_ms()
local out = {}
local function run(id, t, fence, att)
  local d = redis.call('HMGET', t, 'owner', 'tool', 'ver', 'args', 'ctx', 'rnd', 'rst')
  local ia = {}
  if tonumber(d[6]) > 1 then ia = redis.call('HGETALL', t .. ':ia') end
  return {id, fence, att, d[1], d[2], d[3], d[4], d[5], d[6], d[7], ia}
end
local before = redis.call('LRANGE', ck, 0, -1)
if #before > 0 then
  for _, id in ipairs(before) do
    local t = tkey(id)
    local f = redis.call('HMGET', t, 'st', 'worker', 'cid', 'fence', 'att')
    if f[1] and not terminal(f[1]) and f[2] == worker and f[3] == ARGV[5] then
      out[#out + 1] = run(id, t, tonumber(f[4]), tonumber(f[5]))
    end
  end
  return {out, ''}
end
local clock = tonumber(redis.call('GET', VC) or '0')
local ids = {}
for _ = 1, 64 do
  if #out >= max then break end
  local popped = redis.call('ZPOPMIN', R, max - #out)
  if #popped == 0 then break end
  for i = 1, #popped, 2 do
    local id = popped[i]
    local tag = tonumber(popped[i + 1])
    if tag > clock then clock = tag end
    local t = tkey(id)
    local f = redis.call('HMGET', t, 'st', 'msg', 'worker')
    -- A run of a task that ended or expired meanwhile is simply dropped.
    if f[1] and not terminal(f[1]) and f[2] and not f[3] then
      local fence = redis.call('HINCRBY', t, 'fence', 1)
      local att = redis.call('HINCRBY', t, 'att', 1)
      redis.call('HSET', t, 'worker', worker, 'cid', ARGV[5])
      redis.call('HDEL', t, 'msg')
      redis.call('ZADD', L, now + lease, id)
      ids[#ids + 1] = id
      out[#out + 1] = run(id, t, fence, att)
    end
  end
end
if #ids > 0 or clock > 0 then
  redis.call('SET', VC, int(clock))
  redis.call('ZREMRANGEBYSCORE', CT, '-inf', clock)
end
if #ids > 0 then
  redis.call('RPUSH', ck, unpack(ids))
  redis.call('PEXPIRE', ck, lease)
  return {out, ''}
end
local last = redis.call('XREVRANGE', W, '+', '-', 'COUNT', 1)
if last[1] then return {out, last[1][1]} end
return {out, '0-0'}
