-- ARGV: prefix, id, owner tag, tool, version ('' none), args, ctx, ttl_ms ('' none), poll_ms, max_attempts
-- Returns the creation time (Unix ms), or -1 when the id is taken.
local t = tkey(ARGV[2])
if redis.call('EXISTS', t) == 1 then return -1 end
local now = now_ms()
redis.call('HSET', t, 'owner', ARGV[3], 'tool', ARGV[4], 'args', ARGV[6], 'ctx', ARGV[7],
  'st', 'working', 'cr', int(now), 'up', int(now), 'poll', ARGV[9], 'max', ARGV[10],
  'fence', '0', 'att', '0', 'rnd', '1')
if ARGV[5] ~= '' then redis.call('HSET', t, 'ver', ARGV[5]) end
if ARGV[8] ~= '' then
  local exp = int(now + tonumber(ARGV[8]))
  redis.call('HSET', t, 'ttl', ARGV[8], 'exp', exp)
  redis.call('PEXPIREAT', t, exp)
end
return now
