-- A: prefix, lease_ms, then (id, worker, fence) per lease. Returns one letter per lease:
-- H held (renewed), C cancelled, L lost, G gone. Renewing pushes the lease's deadline.
local deadline = now_ms() + tonumber(A[2])
local out = {}
for i = 3, #A, 3 do
  local id = A[i]
  local t = tkey(id)
  local f = redis.call('HMGET', t, 'st', 'worker', 'fence')
  if not f[1] then
    ZQ.rem(L, id)
    out[#out + 1] = 'G'
  elseif f[1] == 'cancelled' then out[#out + 1] = 'C'
  elseif terminal(f[1]) then out[#out + 1] = 'G'
  elseif f[2] ~= A[i + 1] or f[3] ~= A[i + 2] then out[#out + 1] = 'L'
  else
    ZQ.add(L, deadline, id)
    out[#out + 1] = 'H'
  end
end
return out
