-- A: prefix, id, owner tags, then (client key, answer)... Returns nil (no such task),
-- I ignored, W waiting for more, R resumed (the next round is queued, exactly once).
local id = A[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'owner', 'st', 'cal', 'rnd', 'w')
if not owned_by(f[1], A[3]) then return false end
if f[2] ~= 'input_required' then return 'I' end
local ir, ik, ia = t .. ':ir', t .. ':ik', t .. ':ia'
local taken = false
for i = 4, #A, 2 do
  local tool_key = redis.call('HGET', ik, A[i])
  if tool_key then
    redis.call('HDEL', ir, A[i])
    redis.call('HDEL', ik, A[i])
    redis.call('HSET', ia, tool_key, A[i + 1])
    taken = true
  end
end
if not taken then return 'I' end
expire_with(t, ia)
if redis.call('HLEN', ir) > 0 then
  redis.call('HSET', t, 'up', int(now_ms()))
  changed(id, f[5])
  return 'W'
end
redis.call('DEL', ir, ik)
redis.call('HSET', t, 'up', int(now_ms()), 'st', 'working', 'att', '0', 'rnd', int(num(f[4], 1) + 1))
redis.call('HDEL', t, 'smsg')
enqueue(t, id, f[3])
changed(id, f[5])
return 'R'
