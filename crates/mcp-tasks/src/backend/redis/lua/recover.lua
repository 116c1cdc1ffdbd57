-- A: prefix, count, lost-worker error JSON, its message.
-- Takes up to `count` overdue leases (their worker stopped renewing) and overdue holds (a
-- claim parked a first run whose release never came: its server died) and decides each: a
-- parked run is queued; a lapsed run starts again if attempts are left, else the task fails for a lost
-- worker. Entries of tasks that ended or expired meanwhile are dropped. Then takes up to
-- `count` expiry buckets that have passed: their tasks are gone, so they leave the kept
-- count, and those that never finished leave the unfinished counts.
-- Returns {entries looked at, {changed ids}, lapsed runs queued again, lapsed runs failed}.
local now = now_ms()
local count = tonumber(A[2])
local changed_ids = {}
local seen = 0
local reruns, fails = 0, 0
for _, key in ipairs({S, L}) do
  ZQ.flush(key)
  local due = redis.call('ZRANGEBYSCORE', key, '-inf', now, 'LIMIT', 0, count)
  seen = seen + #due
  for _, id in ipairs(due) do
    local t = tkey(id)
    local f = redis.call('HMGET', t, 'st', 'msg', 'worker', 'att', 'max', 'cal', 'exp', 'rnd', 'w')
    ZQ.rem(key, id)
    if not f[1] or terminal(f[1]) then
      -- Gone or ended meanwhile.
    elseif key == S then
      -- Never released: its first run is queued at the tag `submit` gave it (queuing it
      -- again, if a release did land, is queuing it once).
      if f[1] == 'working' and f[2] and not f[3] then
        ZQ.add(R, f[2], id)
        wake(id)
        changed_ids[#changed_ids + 1] = id
      end
    elseif f[2] or not f[3] then
      -- (A lease) queued again or parked on input meanwhile.
    elseif num(f[4], 0) < num(f[5], 1) then
      redis.call('HDEL', t, 'worker', 'cid')
      enqueue(t, id, f[6])
      changed_ids[#changed_ids + 1] = id
      reruns = reruns + 1
    else
      finish(t, 'failed', now, {f[6], f[7], f[8], f[1]}, {}, {'err', A[3], 'smsg', A[4]})
      fails = fails + 1
      changed(id, f[9])
      changed_ids[#changed_ids + 1] = id
    end
  end
end
seen = seen + forget_expired(now, count)
return {seen, changed_ids, reruns, fails}
