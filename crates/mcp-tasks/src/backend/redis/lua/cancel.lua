-- A: prefix, id, owner tags ('*': whoever owns it, an operator's cancel). Returns nil (no
-- such task), 1 (cancelled), 2 (already terminal). The holder, if any, is told on
-- `<prefix>:ev`; its heartbeat says so too (the guarantee).
local id = A[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'owner', 'st', 'worker', 'cal', 'exp', 'rnd', 'w')
if not (A[3] == '*' and f[1]) and not owned_by(f[1], A[3]) then return false end
if terminal(f[2]) then return 2 end
finish(t, 'cancelled', now_ms(), {f[4], f[5], f[6], f[2]}, ANYWHERE)
changed(id, f[7])
if f[3] then redis.call('PUBLISH', P .. ':ev', f[3] .. '\t' .. id) end
return 1
