-- A: prefix, worker, max, lease_ms, claim id, how long the claimant will wait for a wake-up
-- when nothing is claimed (ms, '0' none). Takes up to `max` runs, lowest start tag
-- first (fair across callers), and claims each (a new fence, one more attempt, a lease) in
-- the same atomic step. The runs handed out are remembered under the claim id for a lease:
-- the same claim id again (a retry after a lost reply) hands out the same runs, not new
-- ones. Returns {runs, last}: each run is
-- {id, fence, attempt, owner, tool, version, args, ctx, round, request_state, {tool key, answer, ...},
-- creation time (Unix ms)};
-- `last` (when nothing was claimed) is the newest wake-up id, for a blocking wait after it.
local worker = A[2]
local max = tonumber(A[3])
local lease = tonumber(A[4])
local ck = P .. ':cl:' .. A[5]
local now = now_ms()
local out = {}
-- The fields a claim reads of a task: its state, then what a run needs.
local FIELDS = {'st', 'msg', 'worker', 'fence', 'att', 'cid', 'owner', 'tool', 'ver', 'args',
  'ctx', 'rnd', 'rst', 'hold', 'cr'}
local function run(id, t, d, fence, att)
  local ia = {}
  if num(d[12], 1) > 1 then ia = redis.call('HGETALL', t .. ':ia') end
  return {id, fence, att, d[7], d[8], d[9], d[10], d[11], d[12] or '1', d[13], ia, d[15]}
end
local before = redis.call('LRANGE', ck, 0, -1)
if #before > 0 then
  for _, id in ipairs(before) do
    local t = tkey(id)
    local d = redis.call('HMGET', t, unpack(FIELDS))
    if d[1] and not terminal(d[1]) and d[3] == worker and d[6] == A[5] then
      out[#out + 1] = run(id, t, d, num(d[4], 0), num(d[5], 0))
    end
  end
  return {out, ''}
end
local clock = num(NC.get('vc')[1], 0)
local was = clock
local ids = {}
for _ = 1, 64 do
  if #out >= max then break end
  ZQ.flush(R)
  local popped = redis.call('ZPOPMIN', R, max - #out)
  if #popped == 0 then break end
  for i = 1, #popped, 2 do
    local id = popped[i]
    local tag = tonumber(popped[i + 1])
    if tag > clock then clock = tag end
    local t = tkey(id)
    local d = redis.call('HMGET', t, unpack(FIELDS))
    -- A run of a task that ended, expired, is held or waits for input meanwhile is simply
    -- dropped; a first run not yet released is parked for its release (or, once the hold's
    -- deadline passes, the sweeper); past that deadline it runs.
    local live = d[1] and not terminal(d[1]) and d[2] and not d[3]
    if live and d[14] and tonumber(d[14]) > now then
      ZQ.add(S, d[14], id)
      redis.call('HDEL', t, 'hold')
      live = false
    end
    if live then
      local fence, att = num(d[4], 0) + 1, num(d[5], 0) + 1
      redis.call('HSET', t, 'fence', int(fence), 'att', int(att), 'worker', worker, 'cid', A[5])
      redis.call('HDEL', t, 'msg', 'hold')
      ZQ.add(L, now + lease, id)
      ids[#ids + 1] = id
      out[#out + 1] = run(id, t, d, fence, att)
    end
  end
end
if clock > was then NC.put('vc', clock) end
if #ids > 0 then
  redis.call('RPUSH', ck, unpack(ids))
  redis.call('PEXPIRE', ck, lease)
  return {out, ''}
end
-- Runs queued from now on add wake-ups while a claimant may be waiting (and a little longer).
local wait = tonumber(A[6] or '0')
if wait > 0 then
  local keep = wait + 2000
  if redis.call('PTTL', WT) < keep then redis.call('SET', WT, '1', 'PX', keep) end
end
local last = redis.call('XREVRANGE', W, '+', '-', 'COUNT', 1)
if last[1] then return {out, last[1][1]} end
return {out, '0-0'}
