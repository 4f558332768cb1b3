-- bench/scriptcost: a prototype of today's layout (a string key per lock)
-- with a resumable session's hold kept in the lock's own value instead of
-- a field of the session's record, for measuring only (exclusive locks).
-- A plain grant is today's (SCR_ACQUIRE_N's commands: MGET, EXISTS, SET,
-- INCR). A resumable grant adds the session's owner key, a string naming
-- the lockd that owns the session, to the grant's one MGET (today: HGET
-- of the record's o), and writes "TOKEN DELAY SID FENCE COUNT" as the
-- lock's value in the SET it makes anyway (today: an HSET of the
-- record's field, and an HDEL of it at the release). The session's index
-- (the keys it ever asked for, a set) is written only at its first grant
-- of a key (flag 1).
-- KEYS: the epoch key, then per item: the lock, the session's owner key
-- ('' if plain). ARGV: instance, fence idle ms, epoch, then per item:
-- token, lease ms, old token, wait flag, session id, index flag, delay ms.
local function tk(v) return v and string.sub(v, 1, 32) end
local function dl(v) return v and tonumber(string.match(v, '^%S+ (%d+)')) or 0 end
local inst = ARGV[1]
local eg_cur
local function ours(v)
  if string.sub(v, 1, 16) ~= inst then return false end
  if eg_cur == nil then
    local g = redis.call('GET', KEYS[1])
    eg_cur = g ~= false and tonumber(ARGV[3]) >= tonumber(g)
  end
  return eg_cur
end
local function one(kb, ab)
  local K, ok = KEYS[kb + 1], KEYS[kb + 2]
  local resk, wk = K .. ' reserved', K .. ' waiting'
  local g
  if ok ~= '' then
    g = redis.call('MGET', resk, K, wk, ok)
    if g[4] ~= inst then return {0, -3} end
  else
    g = redis.call('MGET', resk, K, wk)
  end
  local res, v, w = g[1], g[2], g[3]
  if res and res ~= inst then return {0, redis.call('PTTL', resk)} end
  if v and tk(v) ~= ARGV[ab + 3] and (dl(v) > 0 or not ours(v)) then
    return {0, redis.call('PTTL', K)}
  end
  if redis.call('EXISTS', K .. ' shared') == 1 then return {0, -4} end
  local f = redis.call('INCR', K .. ' fence')
  if f == 1 then
    local t = redis.call('TIME')
    f = tonumber(t[1]) * 1000000 + math.floor(tonumber(t[2]) / 100000) * 100000 + 1
    redis.call('SET', K .. ' fence', string.format('%.0f', f), 'PX', ARGV[2])
  end
  local d, tok = tonumber(ARGV[ab + 7]), ARGV[ab + 1]
  local val
  if ok ~= '' then
    val = tok .. ' ' .. d .. ' ' .. ARGV[ab + 5] .. ' ' .. string.format('%.0f', f) .. ' 1'
    if ARGV[ab + 6] == '1' then redis.call('SADD', ok .. ' keys', K) end
  else
    val = d > 0 and tok .. ' ' .. d or tok
  end
  redis.call('SET', K, val, 'PX', tonumber(ARGV[ab + 2]) + d)
  if res then redis.call('DEL', resk) end
  return {f, 0, (w and w ~= inst) and 1 or 0}
end
local r = {}
for i = 1, (#KEYS - 1) / 2 do r[i] = one(1 + (i - 1) * 2, 3 + (i - 1) * 7) end
return r
