-- ARGV: prefix, id, worker, fence, lost-worker error JSON, its message. A worker gives its
-- run back (it stops with the run still going): the lost-worker policy applies at once, as
-- in recover. Returns R handed back, T terminal, L lost, G gone. A retry after a hand-back
-- that landed (the run is no longer held, the fence unchanged) answers R again.
local id = ARGV[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'st', 'worker', 'fence', 'msg', 'att', 'max')
if not f[1] then return 'G' end
if terminal(f[1]) then return 'T' end
if not f[2] and f[3] == ARGV[4] then return 'R' end
if f[2] ~= ARGV[3] or f[3] ~= ARGV[4] then return 'L' end
if tonumber(f[5]) < tonumber(f[6]) then
  redis.call('HDEL', t, 'worker', 'cid')
  enqueue(t, id)
else
  redis.call('HSET', t, 'err', ARGV[5], 'smsg', ARGV[6])
  finish(t, 'failed', now_ms(), f[4])
end
return 'R'
