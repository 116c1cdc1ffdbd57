-- ARGV: prefix, worker, max. Reads up to `max` new deliveries for the group and claims each
-- (a new fence, one more attempt) in the same atomic step, so no delivery is ever read
-- without being claimed or dropped. Returns {runs, last}: each run is
-- {id, fence, attempt, owner, tool, version, args, ctx, round, request_state, {tool key, answer, ...}};
-- `last` (when nothing was claimed) is the newest entry id, for a blocking wait after it.
local worker = ARGV[2]
local max = tonumber(ARGV[3])
local out = {}
for _ = 1, 64 do
  if #out >= max then break end
  local r = redis.call('XREADGROUP', 'GROUP', G, C, 'COUNT', max - #out, 'STREAMS', Q, '>')
  if not r then break end
  local entries = r[1][2]
  if #entries == 0 then break end
  for _, e in ipairs(entries) do
    local eid = e[1]
    local id = e[2][2]
    local t = tkey(id)
    local f = redis.call('HMGET', t, 'st', 'msg', 'worker')
    if not f[1] or terminal(f[1]) or f[2] ~= eid or f[3] then
      if f[2] ~= eid then drop_entry(eid) end
    else
      local fence = redis.call('HINCRBY', t, 'fence', 1)
      local att = redis.call('HINCRBY', t, 'att', 1)
      redis.call('HSET', t, 'worker', worker)
      local d = redis.call('HMGET', t, 'owner', 'tool', 'ver', 'args', 'ctx', 'rnd', 'rst')
      local ia = {}
      if tonumber(d[6]) > 1 then ia = redis.call('HGETALL', t .. ':ia') end
      out[#out + 1] = {id, fence, att, d[1], d[2], d[3], d[4], d[5], d[6], d[7], ia}
    end
  end
end
if #out > 0 then return {out, ''} end
local last = redis.call('XREVRANGE', Q, '+', '-', 'COUNT', 1)
if last[1] then return {out, last[1][1]} end
return {out, '0-0'}
