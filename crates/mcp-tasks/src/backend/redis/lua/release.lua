-- A: prefix, id, owner tags, the start tag `submit` placed the first run at ('' when the
-- releasing server does not know it). Lets the first run of a submitted task go (once):
-- its run is queued already, held by the task's `hold` field, unless a claim met it held
-- and parked it in S. With the tag, the submitting server's own release does not look at
-- the task's owner.
local id = A[2]
local t = tkey(id)
local tag = A[4]
if not tag or tag == '' then
  local f = redis.call('HMGET', t, 'owner', 'st', 'msg', 'worker')
  if not owned_by(f[1], A[3]) or f[2] ~= 'working' or not f[3] or f[4] then return 0 end
  tag = f[3]
end
if redis.call('HDEL', t, 'hold') == 1 then
  wake(id)
  return 1
end
-- Parked by a claim that met it held (or released already, or gone).
ZQ.flush(S)
if redis.call('ZREM', S, id) == 0 then return 0 end
ZQ.add(R, tag, id)
wake(id)
return 1
