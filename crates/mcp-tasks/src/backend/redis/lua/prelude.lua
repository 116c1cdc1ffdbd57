-- Shared by every script. ARGV[1] is the key prefix, `{mcpt:<queue>}`: the hash tag keeps a
-- queue's keys in one cluster slot, so touching keys derived from it is safe. Each script's
-- body is the function `one`, run once per item of the call (batch.lua): its arguments are
-- A[2].. (see scripts.rs).
--
-- A line `--@ name` starts the definition of `name`: a script gets only the definitions its
-- body uses (and theirs), so a small script does not pay for building the others.
local P = ARGV[1]
-- Writes deferred to the end of the call: batch.lua runs these after the last item.
local FLUSH = {}
--@ R
local R = P .. ':r'    -- ready runs: task id by virtual start tag (fair queueing)
--@ L
local L = P .. ':l'    -- leases: task id by the Redis-clock deadline of its run
--@ S
local S = P .. ':s'    -- first runs met held by a claim: task id by the deadline of the hold
--@ W
local W = P .. ':w'    -- wake-ups for blocked claims (capped)
--@ WT
local WT = P .. ':wt'  -- present while a claim may be blocked waiting for a wake-up
--@ N
-- The queue's counts and clocks: `u` unfinished tasks, `k` kept tasks (until their expiry),
-- `c:<caller tag>` a caller's unfinished tasks, `t:<caller tag>` the start tag of its last
-- run (while it has unfinished tasks), `vc` the virtual clock (the tag of the last run
-- claimed), `lb` the expiry bucket last registered.
local N = P .. ':n'
--@ XB
local XB = P .. ':xb'  -- expiry buckets: bucket by its end (Unix ms)
--@ BUCKET_MS
local BUCKET_MS = 100  -- the width of an expiry bucket (ms)
--@ tkey
local function tkey(id) return P .. ':t:' .. id end
--@ dkey
-- Present while id `id` is taken though no task holds it: its submission's answer was lost
-- and the submission undone (discard.lua), so one arriving late is refused.
local function dkey(id) return P .. ':d:' .. id end
--@ xkey
-- The bucket of tasks expiring before `b_end`: `<caller tag>` how many of that caller's it
-- holds, `f:<caller tag>` how many of them finished.
local XKEYS = {}
local function xkey(b_end)
  local key = XKEYS[b_end]
  if not key then
    key = P .. ':x:' .. b_end
    XKEYS[b_end] = key
  end
  return key
end
--@ now_ms
-- One time for the whole call: a script runs atomically, so one instant is right.
local NOW = nil
local function now_ms()
  if not NOW then
    local t = redis.call('TIME')
    NOW = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return NOW
end
--@ int
-- A whole number as Redis stores it. Formatting is costly in Lua, and the items of a batch
-- format the same instants and deadlines again and again: each is formatted once per call.
local INTS = {}
local function int(n)
  local text = INTS[n]
  if not text then
    text = string.format('%d', n)
    INTS[n] = text
  end
  return text
end
--@ arg_num
-- An argument's number: items of a batch repeat the same limits and durations, so each
-- text is parsed once per call.
local ARG_NUMS = {}
local function arg_num(text)
  local n = ARG_NUMS[text]
  if n == nil then
    n = tonumber(text) or false
    ARG_NUMS[text] = n
  end
  return n or nil
end
--@ terminal
local function terminal(st) return st == 'completed' or st == 'failed' or st == 'cancelled' end
--@ bucket_end
-- The end of the expiry bucket of a task expiring at `exp_ms` (a number).
local function bucket_end(exp_ms)
  return math.ceil(exp_ms / BUCKET_MS) * BUCKET_MS
end
--@ bucket_of
-- The end of the expiry bucket of a task expiring at `exp` (ms, a string), or nil for none.
local function bucket_of(exp)
  if not exp then return nil end
  return int(bucket_end(tonumber(exp)))
end
--@ num
local function num(text, default) return tonumber(text or '') or default end
--@ call_sliced
-- `cmd` (HSET, HDEL, ZADD, ZREM) of `key` with the arguments in `args` (pairs stay whole),
-- in slices that stay within Lua's argument limit.
local function call_sliced(cmd, key, args)
  for from = 1, #args, 2000 do
    redis.call(cmd, key, unpack(args, from, math.min(from + 1999, #args)))
  end
end
--@ NC
-- The hash N, through this call's copy: each field is read at most once and every change
-- is written once, at the end of the call (FLUSH), so the items of a batch see each
-- other's changes and share the reads and the write. Every field of N is a whole number:
-- the copy holds numbers, parsed once when read and formatted once when written.
local NC = {values = {}, dirty = {}, gone = false}
-- The numbers in the fields `...`, in order (nil for an absent one).
function NC.get(...)
  local count = select('#', ...)
  local values = NC.values
  local names = {...}
  local missing = nil
  for i = 1, count do
    local name = names[i]
    if values[name] == nil then
      if NC.gone then
        values[name] = false
      else
        missing = missing or {}
        missing[#missing + 1] = name
      end
    end
  end
  if missing then
    local got = redis.call('HMGET', N, unpack(missing))
    for i, name in ipairs(missing) do values[name] = tonumber(got[i] or '') or false end
  end
  -- The names' table becomes the values' (with holes for absent fields).
  for i = 1, count do names[i] = values[names[i]] or nil end
  return names
end
-- Sets field `name` to the number `value` (nil removes it).
function NC.put(name, value)
  NC.values[name] = value or false
  NC.dirty[name] = true
end
-- Forgets the whole hash (nothing is kept any more).
function NC.drop()
  NC.values, NC.dirty, NC.gone = {}, {}, true
end
FLUSH[#FLUSH + 1] = function()
  if NC.gone then redis.call('DEL', N) end
  local set, gone = {}, {}
  for name in pairs(NC.dirty) do
    if NC.values[name] then
      set[#set + 1] = name
      set[#set + 1] = int(NC.values[name])
    elseif not NC.gone then
      gone[#gone + 1] = name
    end
  end
  call_sliced('HSET', N, set)
  call_sliced('HDEL', N, gone)
end
--@ BUMP
-- Increments of hash fields, made at the end of the call (FLUSH): the increments a batch
-- makes to one field are one HINCRBY.
local BUMP = {pending = {}}  -- key -> {field -> total}
-- Adds `by` to field `name` of hash `key`.
function BUMP.add(key, name, by)
  local fields = BUMP.pending[key]
  if not fields then
    fields = {}
    BUMP.pending[key] = fields
  end
  fields[name] = (fields[name] or 0) + by
end
-- Makes the increments now.
function BUMP.flush()
  for key, fields in pairs(BUMP.pending) do
    for name, by in pairs(fields) do redis.call('HINCRBY', key, name, by) end
  end
  BUMP.pending = {}
end
FLUSH[#FLUSH + 1] = BUMP.flush
--@ ZQ
-- Writes to the sorted sets R, L and S, made at the end of the call (FLUSH): a batch's adds
-- to one set are one ZADD and its removals one ZREM. Only a member's last write counts, as
-- if they were made in order; code that reads a set flushes it first (`ZQ.flush(key)`).
local ZQ = {pending = {}}  -- key -> {member -> score, or false to remove}
local function zq_of(key)
  local members = ZQ.pending[key]
  if not members then
    members = {}
    ZQ.pending[key] = members
  end
  return members
end
-- Adds (or moves) `member` at `score` in `key`.
function ZQ.add(key, score, member) zq_of(key)[member] = score end
-- Removes `member` from `key`.
function ZQ.rem(key, member) zq_of(key)[member] = false end
-- Makes the writes to `key` now (every key's, without one).
function ZQ.flush(key)
  for k, members in pairs(ZQ.pending) do
    if not key or k == key then
      local add, rem = {}, {}
      for member, score in pairs(members) do
        if score then
          add[#add + 1] = score
          add[#add + 1] = member
        else
          rem[#rem + 1] = member
        end
      end
      call_sliced('ZADD', k, add)
      call_sliced('ZREM', k, rem)
      ZQ.pending[k] = nil
    end
  end
end
FLUSH[#FLUSH + 1] = function() ZQ.flush() end
--@ fresh
-- Whether none of this call's items names a task that exists (or an id taken by an undone
-- submission), the task id being each item's argument `k`: one EXISTS for the whole call
-- instead of one per item (batched scripts only: it reads the call's layout, see the end
-- of this prelude). Items of one call that share an id are told apart by `SEEN` (the ids
-- stored by this call).
local FRESH = nil
local SEEN = {}
local function fresh(k)
  if FRESH == nil then
    local keys = {}
    local i = 3 + tonumber(ARGV[2])
    while i <= #ARGV do
      local id = ARGV[i - 1 + k]
      keys[#keys + 1] = tkey(id)
      keys[#keys + 1] = dkey(id)
      i = i + tonumber(ARGV[i]) + 1
    end
    local found = 0
    for from = 1, #keys, 2000 do
      found = found + redis.call('EXISTS', unpack(keys, from, math.min(from + 1999, #keys)))
    end
    FRESH = found == 0
  end
  return FRESH
end
--@ caller_fields
-- The fields named after caller `cal`, made once per caller and call: in N its unfinished
-- count `c:<cal>` and last start tag `t:<cal>`, in an expiry bucket its finished count
-- `f:<cal>`.
local CALLER_FIELDS = {}
local function caller_fields(cal)
  local fields = CALLER_FIELDS[cal]
  if not fields then
    fields = {'c:' .. cal, 't:' .. cal, 'f:' .. cal}
    CALLER_FIELDS[cal] = fields
  end
  return fields[1], fields[2], fields[3]
end
--@ set_counts
-- Sets the counts `u`, `k` and caller `cal`'s `c`. A caller with nothing unfinished is
-- forgotten (its last tag is behind the clock), and the whole hash when nothing is kept.
local function set_counts(cal, u, k, c)
  if u <= 0 and k <= 0 then
    NC.drop()
    return
  end
  NC.put('u', math.max(u, 0))
  NC.put('k', math.max(k, 0))
  local count, last = caller_fields(cal)
  if c > 0 then
    NC.put(count, c)
  else
    NC.put(count, nil)
    NC.put(last, nil)
  end
end
--@ forget_expired
-- Takes up to `count` expiry buckets that have passed by `now`: their tasks are gone, so
-- they leave the kept count, and those that never finished leave the unfinished counts.
-- Returns how many it took.
local function forget_expired(now, count)
  -- Increments this call made wait in BUMP: the buckets read here must hold them.
  BUMP.flush()
  local buckets = redis.call('ZRANGEBYSCORE', XB, '-inf', now, 'LIMIT', 0, count)
  for _, b in ipairs(buckets) do
    local x = xkey(b)
    local fields = redis.call('HGETALL', x)
    local held, finished = {}, {}
    for i = 1, #fields, 2 do
      local name, n = fields[i], tonumber(fields[i + 1])
      if string.sub(name, 1, 2) == 'f:' then
        finished[string.sub(name, 3)] = n
      else
        held[name] = n
      end
    end
    local n = NC.get('u', 'k')
    local u, k = num(n[1], 0), num(n[2], 0)
    for cal, submitted in pairs(held) do
      local unfinished = submitted - (finished[cal] or 0)
      k = k - submitted
      if unfinished > 0 then
        u = u - unfinished
        local count, last = caller_fields(cal)
        local c = num(NC.get(count)[1], 0) - unfinished
        if c <= 0 then
          NC.put(count, nil)
          NC.put(last, nil)
        else
          NC.put(count, c)
        end
      end
    end
    if u <= 0 and k <= 0 then
      NC.drop()
    else
      NC.put('u', math.max(u, 0))
      NC.put('k', math.max(k, 0))
    end
    redis.call('DEL', x)
    redis.call('ZREM', XB, b)
  end
  return #buckets
end
--@ wake
-- Wakes blocked claims for a run of `id`, when one may be waiting: once per call, as one
-- wake-up wakes every blocked claim and the call's changes land together.
local WOKEN = false
local function wake(id)
  if WOKEN then return end
  WOKEN = true
  if redis.call('EXISTS', WT) == 1 then
    redis.call('XADD', W, 'MAXLEN', '~', 64, '*', 't', id)
  end
end
--@ fair_tag
-- The start tag of a new run of a caller whose last tag is `last`: one past the later of the
-- virtual clock and `last`, so callers take turns whatever each has queued.
local function fair_tag(clock, last)
  local tag = num(clock, 0)
  if num(last, 0) > tag then tag = num(last, 0) end
  return tag + 1
end
--@ enqueue
-- Queues a new run of task `id` of caller `cal` fairly.
local function enqueue(t, id, cal)
  cal = cal or ''
  local _, last = caller_fields(cal)
  local n = NC.get(last, 'vc')
  local tag = fair_tag(n[2], n[1])
  NC.put(last, tag)
  ZQ.add(R, tag, id)
  redis.call('HSET', t, 'msg', int(tag))
  wake(id)
  return tag
end
--@ expire_with
-- Gives a task's side key the task's own absolute expiry.
local function expire_with(t, key)
  local exp = redis.call('HGET', t, 'exp')
  if exp then redis.call('PEXPIREAT', key, exp) end
end
--@ finish
-- Ends a task that is not terminal as `st`, setting `fields` (name, value...) too: drops its
-- queued run (`queued`), its lease (`leased`) or its pending release (`held`), its place in
-- the unfinished counts, and the payloads only a run needs. `f` is the task's
-- {cal, exp, rnd, st} (as stored).
local function finish(t, st, now, f, where, fields)
  local id = string.sub(t, #P + 4)
  if where.queued then ZQ.rem(R, id) end
  if where.leased then ZQ.rem(L, id) end
  if where.held then ZQ.rem(S, id) end
  local cal = f[1] or ''
  local count, _, finished = caller_fields(cal)
  local n = NC.get('u', 'k', count)
  set_counts(cal, num(n[1], 0) - 1, num(n[2], 0), num(n[3], 0) - 1)
  local b = bucket_of(f[2])
  if b then BUMP.add(xkey(b), finished, 1) end
  BUMP.add(P .. ':ended', 'n', 1)
  local set = {'st', st, 'up', int(now)}
  for _, v in ipairs(fields or {}) do set[#set + 1] = v end
  redis.call('HSET', t, unpack(set))
  redis.call('HDEL', t, 'msg', 'worker', 'cid', 'args', 'ctx', 'rst', 'hold')
  if f[4] == 'input_required' or num(f[3], 1) > 1 then
    redis.call('DEL', t .. ':ir', t .. ':ik', t .. ':ia')
  end
end
--@ ANYWHERE
-- Wherever a task may be: for ends that do not know (a cancel).
local ANYWHERE = {queued = true, leased = true, held = true}
--@ owned_by
-- Whether a task's stored owner tag is one of `tags` (space-separated; tags are [0-9a-f.]):
-- the owner's tag under each configured key, so tasks tagged before a rotation match too.
local function owned_by(stored, tags)
  if not stored then return false end
  for tag in string.gmatch(tags, '%S+') do
    if tag == stored then return true end
  end
  return false
end
--@ changed
-- Tells listeners on `<prefix>:ch` that task `id` changed, when one watches it (`watched` is
-- the task's `w` field, set by watch.lua): unwatched tasks cost no message.
local function changed(id, watched)
  if watched then redis.call('PUBLISH', P .. ':ch', id) end
end
--@ record_row
-- What an operator sees of task `id` (operator.lua), or nil when there is no such task:
-- {id, st, smsg, tool, ver, cal, cr, up, exp, att, max, rnd, worker, lease deadline,
-- queued ('1' or ''), err (of a failed task)}; '' stands for an absent field.
local function record_row(id)
  local f = redis.call('HMGET', tkey(id), 'st', 'smsg', 'tool', 'ver', 'cal', 'cr', 'up', 'exp',
    'att', 'max', 'rnd', 'worker', 'err')
  if not f[1] then return nil end
  local lease = f[12] and redis.call('ZSCORE', L, id)
  local queued = not terminal(f[1]) and not f[12] and redis.call('ZSCORE', R, id)
  local err = f[1] == 'failed' and f[13]
  return {id, f[1], f[2] or '', f[3] or '', f[4] or '', f[5] or '', f[6] or '', f[7] or '',
    f[8] or '', f[9] or '', f[10] or '', f[11] or '', f[12] or '', lease or '',
    queued and '1' or '', err or ''}
end
