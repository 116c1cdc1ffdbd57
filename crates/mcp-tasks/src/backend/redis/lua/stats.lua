-- A: prefix. The queue's counts, for metrics and operators:
-- {runs ready, first runs parked for their release, runs leased, unfinished tasks, kept tasks,
-- tasks ended since the queue began}.
local n = NC.get('u', 'k')
return {redis.call('ZCARD', R), redis.call('ZCARD', S), redis.call('ZCARD', L), num(n[1], 0),
  num(n[2], 0), num(redis.call('HGET', P .. ':ended', 'n'), 0)}
