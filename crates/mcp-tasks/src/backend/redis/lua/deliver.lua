-- ARGV: prefix, id, owner tags, then (client key, answer)... Returns nil (no such task),
-- I ignored, W waiting for more, R resumed (the next round is queued, exactly once).
local id = ARGV[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'owner', 'st')
if not owned_by(f[1], ARGV[3]) then return false end
if f[2] ~= 'input_required' then return 'I' end
local ir, ik, ia = t .. ':ir', t .. ':ik', t .. ':ia'
local taken = false
for i = 4, #ARGV, 2 do
  local tool_key = redis.call('HGET', ik, ARGV[i])
  if tool_key then
    redis.call('HDEL', ir, ARGV[i])
    redis.call('HDEL', ik, ARGV[i])
    redis.call('HSET', ia, tool_key, ARGV[i + 1])
    taken = true
  end
end
if not taken then return 'I' end
expire_with(t, ia)
redis.call('HSET', t, 'up', int(now_ms()))
if redis.call('HLEN', ir) > 0 then return 'W' end
redis.call('DEL', ir, ik)
redis.call('HSET', t, 'st', 'working', 'att', '0')
redis.call('HDEL', t, 'smsg')
redis.call('HINCRBY', t, 'rnd', 1)
enqueue(t, id)
return 'R'
