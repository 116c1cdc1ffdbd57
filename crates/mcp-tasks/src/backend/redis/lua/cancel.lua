-- ARGV: prefix, id, owner tags. Returns nil (no such task), 1 (cancelled), 2 (already terminal).
-- The holder, if any, is told on `<prefix>:ev`; its heartbeat says so too (the guarantee).
local id = ARGV[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'owner', 'st', 'msg', 'worker')
if not owned_by(f[1], ARGV[3]) then return false end
if terminal(f[2]) then return 2 end
finish(t, 'cancelled', now_ms(), f[3])
if f[4] then redis.call('PUBLISH', P .. ':ev', f[4] .. '\t' .. id) end
return 1
