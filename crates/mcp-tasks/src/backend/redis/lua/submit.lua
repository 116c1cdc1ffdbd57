-- A: prefix, id, owner tag, tool, version ('' none), args, ctx, ttl_ms ('' none), poll_ms,
-- max_attempts, caller tag. Shared by the call's items (ARGV[3] ..): the release deadline
-- (ms after now), max unfinished per caller, max unfinished, max kept. Returns {creation
-- time (Unix ms), start tag of the first run}; -1 when the id is taken (by a task, or by a
-- submission undone since, see discard.lua); -2, -3, -4 when the caller's, everybody's
-- unfinished, or the kept tasks are at their limit (then nothing is stored). The first run
-- is queued now, at its fair place, but held (field `hold`: until when) until `release`: a
-- claim that meets it held parks it in S for `release` or the sweeper.
local id = A[2]
local t = tkey(id)
if fresh(2) then
  if SEEN[id] then return -1 end
elseif redis.call('EXISTS', t, dkey(id)) > 0 then
  return -1
end
local now = now_ms()
local cal = A[11]
local ckey, tagkey = caller_fields(cal)
local n = NC.get('u', 'k', ckey, tagkey, 'vc', 'lb')
local max_c, max_u, max_k = arg_num(ARGV[4]), arg_num(ARGV[5]), arg_num(ARGV[6])
if num(n[3], 0) >= max_c or num(n[1], 0) >= max_u or num(n[2], 0) >= max_k then
  -- Expired tasks leave the counts when the sweeper meets their expiry bucket, or here,
  -- before a count at its limit refuses.
  for _ = 1, 16 do
    if forget_expired(now, 64) < 64 then break end
  end
  n = NC.get('u', 'k', ckey, tagkey, 'vc', 'lb')
  if num(n[3], 0) >= max_c then return -2 end
  if num(n[1], 0) >= max_u then return -3 end
  if num(n[2], 0) >= max_k then return -4 end
end
local tag = fair_tag(n[5], n[4])
-- Defaults are not stored: fence and attempt 0, round 1, updated when created.
local fields = {'owner', A[3], 'tool', A[4], 'args', A[6], 'ctx', A[7], 'st', 'working',
  'cr', int(now), 'poll', A[9], 'max', A[10], 'cal', cal, 'msg', int(tag),
  'hold', int(now + arg_num(ARGV[3]))}
if A[5] ~= '' then
  fields[#fields + 1] = 'ver'
  fields[#fields + 1] = A[5]
end
local exp, exp_ms = nil, nil
if A[8] ~= '' then
  exp_ms = now + arg_num(A[8])
  exp = int(exp_ms)
  fields[#fields + 1] = 'ttl'
  fields[#fields + 1] = A[8]
  fields[#fields + 1] = 'exp'
  fields[#fields + 1] = exp
end
redis.call('HSET', t, unpack(fields))
SEEN[id] = true
if exp then redis.call('PEXPIREAT', t, exp) end
set_counts(cal, num(n[1], 0) + 1, num(n[2], 0) + 1, num(n[3], 0) + 1)
NC.put(tagkey, tag)
if exp_ms then
  local b = bucket_end(exp_ms)
  BUMP.add(xkey(int(b)), cal, 1)
  if n[6] ~= b then
    redis.call('ZADD', XB, int(b), int(b))
    NC.put('lb', b)
  end
end
-- Released by `release`, or once the hold's deadline passes (the submitting server died or
-- its release failed): by the claim that meets it then, or by the sweeper if parked.
ZQ.add(R, tag, id)
return {now, tag}
