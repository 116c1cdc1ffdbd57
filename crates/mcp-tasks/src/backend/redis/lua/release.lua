-- A: prefix, id, owner tags, the start tag `submit` placed the first run at ('' when the
-- releasing server does not know it). Queues the first run of a submitted task (once).
-- With the tag, the run is queued without looking at the task: a claim drops a run of a
-- task that ended, is held, or waits for input meanwhile, and queuing it twice is queuing it
-- once.
local id = A[2]
local tag = A[4]
if not tag or tag == '' then
  local f = redis.call('HMGET', tkey(id), 'owner', 'st', 'msg', 'worker')
  if not owned_by(f[1], A[3]) or f[2] ~= 'working' or not f[3] or f[4] then return 0 end
  tag = f[3]
end
redis.call('ZREM', S, id)
redis.call('ZADD', R, tag, id)
wake(id)
return 1
