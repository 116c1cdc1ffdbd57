-- A: prefix, id, owner tags. Marks the task watched (`w`), so its changes are published on
-- `<prefix>:ch`. Returns nil for a missing or foreign task, else 1.
local t = tkey(A[2])
if not owned_by(redis.call('HGET', t, 'owner'), A[3]) then return false end
redis.call('HSET', t, 'w', '1')
return 1
