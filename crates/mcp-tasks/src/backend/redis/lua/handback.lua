-- A: prefix, id, worker, fence, lost-worker error JSON, its message. A worker gives its
-- run back (it stops with the run still going): the lost-worker policy applies at once, as
-- in recover. Returns R handed back, T terminal, L lost, G gone. A retry after a hand-back
-- that landed (the run is no longer held, the fence unchanged) answers R again.
local id = A[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'st', 'worker', 'fence', 'att', 'max', 'cal', 'exp', 'rnd', 'w')
if not f[1] then return 'G' end
if terminal(f[1]) then return 'T' end
if not f[2] and f[3] == A[4] then return 'R' end
if f[2] ~= A[3] or f[3] ~= A[4] then return 'L' end
if num(f[4], 0) < num(f[5], 1) then
  redis.call('HDEL', t, 'worker', 'cid')
  ZQ.rem(L, id)
  enqueue(t, id, f[6])
else
  finish(t, 'failed', now_ms(), {f[6], f[7], f[8], f[1]}, {leased = true},
    {'err', A[5], 'smsg', A[6]})
  changed(id, f[9])
end
return 'R'
