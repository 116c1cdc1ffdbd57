-- ARGV: prefix, then (id, worker, fence) per lease. Returns one letter per lease:
-- H held (renewed), C cancelled, L lost, G gone. Renewing resets the delivery's idle time,
-- which is the lease.
local out = {}
for i = 2, #ARGV, 3 do
  local t = tkey(ARGV[i])
  local f = redis.call('HMGET', t, 'st', 'worker', 'fence', 'msg')
  if not f[1] then out[#out + 1] = 'G'
  elseif f[1] == 'cancelled' then out[#out + 1] = 'C'
  elseif terminal(f[1]) then out[#out + 1] = 'G'
  elseif f[2] ~= ARGV[i + 1] or f[3] ~= ARGV[i + 2] or not f[4] then out[#out + 1] = 'L'
  else
    redis.call('XCLAIM', Q, G, C, 0, f[4], 'IDLE', 0, 'JUSTID')
    out[#out + 1] = 'H'
  end
end
return out
