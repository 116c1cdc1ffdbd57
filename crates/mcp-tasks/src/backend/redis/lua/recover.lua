-- ARGV: prefix, count, lost-worker error JSON, its message.
-- Takes up to `count` overdue leases (their worker stopped renewing) and overdue releases
-- (the submitting server never released the task) and decides each: a released task is
-- queued; a lapsed run starts again if attempts are left, else the task fails for a lost
-- worker. Entries of tasks that ended or expired meanwhile are dropped.
-- Returns {entries looked at, {changed ids}}.
local now = now_ms()
local count = tonumber(ARGV[2])
local changed_ids = {}
local seen = 0
for _, key in ipairs({S, L}) do
  local due = redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, count)
  seen = seen + #due
  for _, id in ipairs(due) do
    local t = tkey(id)
    local f = redis.call('HMGET', t, 'st', 'msg', 'worker', 'att', 'max')
    if not f[1] then
      redis.call('ZREM', key, id)
    elseif terminal(f[1]) or f[2] or (key == L and not f[3]) then
      -- Ended, already queued, or (a lease) parked on input meanwhile.
      redis.call('ZREM', key, id)
    elseif key == S then
      if f[1] == 'working' and not f[3] then
        enqueue(t, id)
        changed_ids[#changed_ids + 1] = id
      else
        redis.call('ZREM', key, id)
      end
    elseif tonumber(f[4]) < tonumber(f[5]) then
      redis.call('HDEL', t, 'worker', 'cid')
      enqueue(t, id)
      changed_ids[#changed_ids + 1] = id
    else
      redis.call('HSET', t, 'err', ARGV[3], 'smsg', ARGV[4])
      finish(t, 'failed', now)
      changed_ids[#changed_ids + 1] = id
    end
  end
end
return {seen, changed_ids}
