-- A: prefix, what, then by what:
--   'one', id: the task's record_row, or nil;
--   'list', cursor, count: one SCAN step over the queue's tasks: {next cursor, rows, now};
--   'seen', worker, report (JSON), most workers kept: a worker's report, kept with the
--     time it came (by the Redis clock); returns that time;
--   'gone', worker: forgets a worker that stopped;
--   'workers': {now, {worker, seen, report}...};
--   'forget', ms: forgets the workers not heard from for that long; returns how many.
-- Workers not heard from for a day are forgotten as reports come in, and beyond the most
-- kept, the one heard from longest ago.
local what = A[2]
local WK, WKS = P .. ':wk', P .. ':wks'
local function forget(ids)
  for _, id in ipairs(ids) do
    redis.call('HDEL', WK, id)
    redis.call('ZREM', WKS, id)
  end
  return #ids
end
if what == 'one' then
  return record_row(A[3]) or false
elseif what == 'list' then
  local pattern = (string.gsub(P, '([%*%?%[%]\\])', '\\%1')) .. ':t:*'
  local reply = redis.call('SCAN', A[3], 'MATCH', pattern, 'COUNT', A[4])
  local rows = {}
  local from = #P + 4
  for _, key in ipairs(reply[2]) do
    local id = string.sub(key, from)
    -- A task's side keys (`<task key>:ir` ...) are not tasks.
    if not string.find(id, ':', 1, true) then
      rows[#rows + 1] = record_row(id)
    end
  end
  return {reply[1], rows, now_ms()}
elseif what == 'seen' then
  local now = now_ms()
  redis.call('HSET', WK, A[3], A[4])
  redis.call('ZADD', WKS, now, A[3])
  local old = redis.call('ZRANGEBYSCORE', WKS, '-inf', now - 86400000, 'LIMIT', 0, 16)
  local over = redis.call('ZCARD', WKS) - tonumber(A[5])
  if over > 0 then
    for _, id in ipairs(redis.call('ZRANGE', WKS, 0, over - 1)) do old[#old + 1] = id end
  end
  forget(old)
  return now
elseif what == 'gone' then
  return forget({A[3]})
elseif what == 'workers' then
  local seen = redis.call('ZRANGE', WKS, 0, -1, 'WITHSCORES')
  local out = {}
  for i = 1, #seen, 2 do
    out[#out + 1] = {seen[i], seen[i + 1], redis.call('HGET', WK, seen[i]) or ''}
  end
  return {now_ms(), out}
elseif what == 'forget' then
  return forget(redis.call('ZRANGEBYSCORE', WKS, '-inf', '(' .. (now_ms() - tonumber(A[3]))))
end
return redis.error_reply('operator.lua: unknown request ' .. tostring(what))
