-- A: prefix, id, owner tags. Returns nil for a missing or foreign task, else
-- {st, smsg, cr, up, ttl, poll, res, err, {ckey, request, ...}}.
local t = tkey(A[2])
local f = redis.call('HMGET', t, 'owner', 'st', 'smsg', 'cr', 'up', 'ttl', 'poll', 'res', 'err')
if not owned_by(f[1], A[3]) then return false end
local ir = {}
if f[2] == 'input_required' then ir = redis.call('HGETALL', t .. ':ir') end
return {f[2], f[3], f[4], f[5] or f[4], f[6], f[7], f[8], f[9], ir}
