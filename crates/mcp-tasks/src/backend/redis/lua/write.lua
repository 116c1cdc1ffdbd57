-- ARGV: prefix, id, worker, fence, kind, then per kind:
--   complete: result
--   fail: error, has status message ('1'/'0'), status message
--   status: status message (the task keeps running)
--   input: has request state ('1'/'0'), request state, then (client key, tool key, request)...
-- Returns R recorded, T terminal, L lost, G gone. Every write is safe to retry: a retried
-- complete or fail after one that landed answers T, a retried input R.
local id = ARGV[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'st', 'worker', 'fence', 'msg')
if not f[1] then return 'G' end
if terminal(f[1]) then return 'T' end
local kind = ARGV[5]
-- A retry of a parking that landed (parked by this very run, not claimed since).
if kind == 'input' and f[1] == 'input_required' and not f[2] and f[3] == ARGV[4] then
  return 'R'
end
if f[2] ~= ARGV[3] or f[3] ~= ARGV[4] then return 'L' end
local now = now_ms()
if kind == 'complete' then
  redis.call('HSET', t, 'res', ARGV[6])
  finish(t, 'completed', now, f[4])
elseif kind == 'fail' then
  redis.call('HSET', t, 'err', ARGV[6])
  if ARGV[7] == '1' then redis.call('HSET', t, 'smsg', ARGV[8]) else redis.call('HDEL', t, 'smsg') end
  finish(t, 'failed', now, f[4])
elseif kind == 'status' then
  redis.call('HSET', t, 'smsg', ARGV[6], 'up', int(now))
else
  local ir, ik = t .. ':ir', t .. ':ik'
  redis.call('DEL', ir, ik, t .. ':ia')
  for i = 8, #ARGV, 3 do
    redis.call('HSET', ir, ARGV[i], ARGV[i + 2])
    redis.call('HSET', ik, ARGV[i], ARGV[i + 1])
  end
  expire_with(t, ir)
  expire_with(t, ik)
  if ARGV[6] == '1' then redis.call('HSET', t, 'rst', ARGV[7]) else redis.call('HDEL', t, 'rst') end
  redis.call('ZREM', L, id)
  redis.call('HDEL', t, 'worker', 'cid', 'msg')
  redis.call('HSET', t, 'st', 'input_required', 'up', int(now))
end
return 'R'
