-- Shared by every script (prepended). ARGV[1] is the key prefix, `{mcpt:<queue>}`: the hash
-- tag keeps a queue's keys in one cluster slot, so touching keys derived from it is safe.
local P = ARGV[1]
local Q = P .. ':q'
local G = 'workers'
local C = 'c'
local function tkey(id) return P .. ':t:' .. id end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(n) return string.format('%d', n) end
local function terminal(st) return st == 'completed' or st == 'failed' or st == 'cancelled' end
-- Removes a delivery from the queue and from the pending list.
local function drop_entry(eid)
  if eid then
    redis.call('XACK', Q, G, eid)
    redis.call('XDEL', Q, eid)
  end
end
-- Queues a run of task `id`: a new stream entry, remembered as the task's `msg`.
local function enqueue(t, id)
  local eid = redis.call('XADD', Q, '*', 't', id)
  redis.call('HSET', t, 'msg', eid)
  return eid
end
-- Gives a task's side key the task's own absolute expiry.
local function expire_with(t, key)
  local exp = redis.call('HGET', t, 'exp')
  if exp then redis.call('PEXPIREAT', key, exp) end
end
-- Ends a task: drops its delivery and everything pending, and the payloads only a run needs.
local function finish(t, st, now, eid)
  drop_entry(eid)
  redis.call('HSET', t, 'st', st, 'up', int(now))
  redis.call('HDEL', t, 'msg', 'worker', 'args', 'ctx', 'rst')
  redis.call('DEL', t .. ':ir', t .. ':ik', t .. ':ia')
end
-- Whether a task's stored owner tag is one of `tags` (space-separated; tags are [0-9a-f.]):
-- the owner's tag under each configured key, so tasks tagged before a rotation match too.
local function owned_by(stored, tags)
  if not stored then return false end
  for tag in string.gmatch(tags, '%S+') do
    if tag == stored then return true end
  end
  return false
end
