-- Appended to every script: runs `one` for each item of the call, in order. ARGV: prefix,
-- the count h of the arguments all items share, those h arguments (ARGV[3] .. ARGV[2 + h],
-- read by the body as they are), then per item its argument count and its arguments. Returns {replies, errors}: one reply
-- per item, and (item number, message) for each item whose run raised an error (its reply
-- is then false; the other items are not affected).
local out = {}
local errors = {}
local i = 3 + tonumber(ARGV[2])
local total = #ARGV
while i <= total do
  local n = tonumber(ARGV[i])
  -- The item's arguments are ARGV[i + 1] .. ARGV[i + n]: its body's A[2] .. A[n + 1]
  -- (A[k] is ARGV[o + k], #A is An).
  local ok, reply = pcall(one, i - 1, n + 1)
  if not ok then
    errors[#errors + 1] = #out + 1
    errors[#errors + 1] = tostring(type(reply) == 'table' and reply.err or reply)
    reply = false
  elseif reply == nil then
    reply = false
  end
  out[#out + 1] = reply
  i = i + n + 1
end
for _, flush in ipairs(FLUSH) do flush() end
return {out, errors}
