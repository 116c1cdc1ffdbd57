-- A: prefix, id, worker, fence, kind, then per kind:
--   complete: result
--   fail: error, has status message ('1'/'0'), status message
--   status: status message (the task keeps running)
--   input: has request state ('1'/'0'), request state, then (client key, tool key, request)...
-- Returns R recorded, T terminal, L lost, G gone. Every write is safe to retry: a retried
-- complete or fail after one that landed answers T, a retried input R.
local id = A[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'st', 'worker', 'fence', 'cal', 'exp', 'rnd', 'w')
if not f[1] then return 'G' end
if terminal(f[1]) then return 'T' end
local kind = A[5]
-- A retry of a parking that landed (parked by this very run, not claimed since).
if kind == 'input' and f[1] == 'input_required' and not f[2] and f[3] == A[4] then
  return 'R'
end
if f[2] ~= A[3] or f[3] ~= A[4] then return 'L' end
local now = now_ms()
if kind == 'complete' then
  finish(t, 'completed', now, {f[4], f[5], f[6], f[1]}, {leased = true}, {'res', A[6]})
elseif kind == 'fail' then
  if A[7] == '1' then
    finish(t, 'failed', now, {f[4], f[5], f[6], f[1]}, {leased = true}, {'err', A[6], 'smsg', A[8]})
  else
    redis.call('HDEL', t, 'smsg')
    finish(t, 'failed', now, {f[4], f[5], f[6], f[1]}, {leased = true}, {'err', A[6]})
  end
elseif kind == 'status' then
  redis.call('HSET', t, 'smsg', A[6], 'up', int(now))
else
  local ir, ik = t .. ':ir', t .. ':ik'
  redis.call('DEL', ir, ik, t .. ':ia')
  for i = 8, #A, 3 do
    redis.call('HSET', ir, A[i], A[i + 2])
    redis.call('HSET', ik, A[i], A[i + 1])
  end
  expire_with(t, ir)
  expire_with(t, ik)
  if A[6] == '1' then redis.call('HSET', t, 'rst', A[7]) else redis.call('HDEL', t, 'rst') end
  ZQ.rem(L, id)
  redis.call('HDEL', t, 'worker', 'cid', 'msg')
  redis.call('HSET', t, 'st', 'input_required', 'up', int(now))
end
changed(id, f[7])
return 'R'
