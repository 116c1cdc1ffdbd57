-- ARGV: prefix, id, owner tag, tool, version ('' none), args, ctx, ttl_ms ('' none), poll_ms,
-- max_attempts, caller tag, release deadline (ms after now), max unfinished per caller, max
-- unfinished, max kept. Returns the creation time (Unix ms); -1 when the id is taken; -2, -3,
-- -4 when the caller's, everybody's unfinished, or the kept tasks are at their limit (then
-- nothing is stored).
local t = tkey(ARGV[2])
if redis.call('EXISTS', t) == 1 then return -1 end
local now = now_ms()
local cal = ARGV[11]
local uk = ukey(cal)
-- A count is first trimmed of expired tasks (their keys are gone): each member is trimmed
-- once, so this costs one removal per task on average.
local function full(key, max)
  redis.call('ZREMRANGEBYSCORE', key, '-inf', now)
  return redis.call('ZCARD', key) >= max
end
if full(uk, tonumber(ARGV[13])) then return -2 end
if full(UA, tonumber(ARGV[14])) then return -3 end
if full(KA, tonumber(ARGV[15])) then return -4 end
redis.call('HSET', t, 'owner', ARGV[3], 'tool', ARGV[4], 'args', ARGV[6], 'ctx', ARGV[7],
  'st', 'working', 'cr', int(now), 'up', int(now), 'poll', ARGV[9], 'max', ARGV[10],
  'fence', '0', 'att', '0', 'rnd', '1')
redis.call('HSET', t, 'cal', cal)
if ARGV[5] ~= '' then redis.call('HSET', t, 'ver', ARGV[5]) end
local exp = '+inf'
if ARGV[8] ~= '' then
  exp = int(now + tonumber(ARGV[8]))
  redis.call('HSET', t, 'ttl', ARGV[8], 'exp', exp)
  redis.call('PEXPIREAT', t, exp)
end
local id = ARGV[2]
-- Counted; a count lives as long as its longest-lived task.
local function count(key)
  redis.call('ZADD', key, exp, id)
  if exp == '+inf' then redis.call('PERSIST', key)
  elseif redis.call('ZCARD', key) == 1 then redis.call('PEXPIREAT', key, exp)
  else redis.call('PEXPIREAT', key, exp, 'GT') end
end
count(uk)
count(UA)
count(KA)
-- Released by `release`, or by the sweeper once this deadline passes (the submitting server
-- died or its release failed).
redis.call('ZADD', S, now + tonumber(ARGV[12]), id)
return now
