-- A: prefix, id. Shared by the call's items (ARGV[3]): how long an id stays taken (ms).
-- Undoes a submission whose answer never reached its server, so its client was told it
-- failed (its server never released it): a task that never ran is deleted, with its place
-- in the counts. That is one still held (field `hold`), parked in S by a claim that met it
-- held, or queued in R by the sweeper once its hold passed but not claimed yet (no
-- attempt). An id no task holds yet is taken for a while, so that the submission, should
-- it arrive late, is refused. Returns 1 (deleted), 2 (taken), 0 (it ran or ended already:
-- it stays).
local id = A[2]
local t = tkey(id)
local f = redis.call('HMGET', t, 'st', 'hold', 'cal', 'exp', 'worker', 'att')
if not f[1] then
  redis.call('SET', dkey(id), '1', 'PX', ARGV[3])
  return 2
end
if f[1] ~= 'working' or f[5] or num(f[6], 0) > 0 then return 0 end
if not f[2] then
  ZQ.flush(S)
  ZQ.flush(R)
  if not redis.call('ZSCORE', S, id) and not redis.call('ZSCORE', R, id) then return 0 end
end
ZQ.rem(R, id)
ZQ.rem(S, id)
local cal = f[3] or ''
local count = caller_fields(cal)
local n = NC.get('u', 'k', count)
set_counts(cal, num(n[1], 0) - 1, num(n[2], 0) - 1, num(n[3], 0) - 1)
local b = bucket_of(f[4])
if b then BUMP.add(xkey(b), cal, -1) end
redis.call('DEL', t)
return 1
