-- ARGV: prefix, lease_ms, cursor, count, lost-worker error JSON, its message.
-- Takes deliveries idle for a whole lease (their worker stopped renewing) and decides each:
-- another start if attempts are left, else `failed` for a lost worker. Deliveries of tasks
-- that ended or expired meanwhile are dropped. Returns {next cursor, {changed ids}}.
local r = redis.call('XAUTOCLAIM', Q, G, C, ARGV[2], ARGV[3], 'COUNT', ARGV[4])
local changed_ids = {}
for _, e in ipairs(r[2]) do
  local eid = e[1]
  local id = e[2] and e[2][2]
  if not id then
    drop_entry(eid)
  else
    local t = tkey(id)
    local f = redis.call('HMGET', t, 'st', 'msg', 'worker', 'att', 'max')
    if not f[1] or terminal(f[1]) or f[2] ~= eid then
      drop_entry(eid)
    elseif not f[3] or tonumber(f[4]) < tonumber(f[5]) then
      drop_entry(eid)
      redis.call('HDEL', t, 'worker')
      enqueue(t, id)
      changed_ids[#changed_ids + 1] = id
    else
      redis.call('HSET', t, 'err', ARGV[5], 'smsg', ARGV[6])
      finish(t, 'failed', now_ms(), eid)
      changed_ids[#changed_ids + 1] = id
    end
  end
end
return {r[1], changed_ids}
