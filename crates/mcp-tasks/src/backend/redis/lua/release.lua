-- ARGV: prefix, id, owner tags. Queues the first run of a submitted task (once).
local id = ARGV[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'owner', 'st', 'msg', 'worker')
if not owned_by(f[1], ARGV[3]) or f[2] ~= 'working' or f[3] or f[4] then return 0 end
enqueue(t, id)
return 1
