-- Shared by every script (prepended). ARGV[1] is the key prefix, `{mcpt:<queue>}`: the hash
-- tag keeps a queue's keys in one cluster slot, so touching keys derived from it is safe.
local P = ARGV[1]
local R = P .. ':r'    -- ready runs: task id by virtual start tag (fair queueing)
local VC = P .. ':vc'  -- the virtual clock: the tag of the last run claimed
local CT = P .. ':ct'  -- caller tag by the last start tag it got (only tags past the clock)
local L = P .. ':l'    -- leases: task id by the Redis-clock deadline of its run
local S = P .. ':s'    -- submitted, not yet released: task id by the deadline of its release
local W = P .. ':w'    -- wake-ups for blocked claims (capped)
local UA = P .. ':ua'  -- unfinished tasks by expiry
local KA = P .. ':ka'  -- kept tasks by expiry
local function tkey(id) return P .. ':t:' .. id end
local function ukey(cal) return P .. ':u:' .. cal end
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function int(n) return string.format('%d', n) end
local function terminal(st) return st == 'completed' or st == 'failed' or st == 'cancelled' end
-- Queues a run of task `id` fairly: its start tag is one past the later of the virtual clock
-- and its caller's last tag, so callers take turns whatever each has queued.
local function enqueue(t, id)
  local cal = redis.call('HGET', t, 'cal') or ''
  local tag = tonumber(redis.call('GET', VC) or '0')
  local last = redis.call('ZSCORE', CT, cal)
  if last and tonumber(last) > tag then tag = tonumber(last) end
  tag = tag + 1
  redis.call('ZADD', CT, tag, cal)
  redis.call('ZADD', R, tag, id)
  redis.call('ZREM', L, id)
  redis.call('ZREM', S, id)
  redis.call('HSET', t, 'msg', int(tag))
  redis.call('XADD', W, 'MAXLEN', '~', 64, '*', 't', id)
  return tag
end
-- Gives a task's side key the task's own absolute expiry.
local function expire_with(t, key)
  local exp = redis.call('HGET', t, 'exp')
  if exp then redis.call('PEXPIREAT', key, exp) end
end
-- Ends a task: drops its queued run or lease, its place in the unfinished counts, and the
-- payloads only a run needs. (The fourth argument of older call sites is unused.)
local function finish(t, st, now)
  local id = string.sub(t, #P + 4)
  local cal = redis.call('HGET', t, 'cal')
  redis.call('ZREM', R, id)
  redis.call('ZREM', L, id)
  redis.call('ZREM', S, id)
  redis.call('ZREM', UA, id)
  if cal then redis.call('ZREM', ukey(cal), id) end
  redis.call('HSET', t, 'st', st, 'up', int(now))
  redis.call('HDEL', t, 'msg', 'worker', 'cid', 'args', 'ctx', 'rst')
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
