-- bench/scriptcost: a prototype of one hash per lock with the session's
-- entry in the lock's own hash (doc/cluster.md, "Sessions in the lock's
-- hash"), for measuring only. As h1_acquire.lua, and for a resumable
-- session: the holder's session id (field si) and hold count (n) written
-- in the grant's one HSET, and the owner check made per key, in the read
-- the grant makes anyway: field h:SID holds the session's adoption count
-- as the last lockd to write it knew it; an adoption raises it on every
-- key of the session's index, so a grant carrying a lower count (a lockd
-- that lost the session) is refused. The session's index (the keys it
-- ever asked for, in the session's record) is written only at the
-- session's first grant of a key (flag 1), with today's owner check.
-- KEYS: per item, the lock's hash and the session's record ('' if plain).
-- ARGV: instance, fence idle ms, epoch, then per item: token, lease ms,
-- old token, wait flag, session id, adoption count, index flag, delay ms.
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function tk(v) return v and string.sub(v, 1, 32) end
local function dl(v) return v and tonumber(string.sub(v, 34)) or 0 end
local inst, idle, epoch = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now
local function one(k, rk, ab)
  local tok, old, sid = ARGV[ab + 1], ARGV[ab + 3], ARGV[ab + 5]
  local lease = tonumber(ARGV[ab + 2])
  now = now or clock()
  local g
  if sid ~= '' then
    g = redis.call('HMGET', k, 't', 'x', 'w', 'r', 'rx', 'f', 'e', 's', 'h:' .. sid)
    if g[9] and tonumber(g[9]) > tonumber(ARGV[ab + 6]) then return {0, -3} end
  else
    g = redis.call('HMGET', k, 't', 'x', 'w', 'r', 'rx', 'f', 'e', 's')
  end
  local t, x, w, r, rx, f, e, s = g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8]
  if r and r ~= inst and tonumber(rx) > now then return {0, tonumber(rx) - now} end
  if t and tonumber(x) > now and tk(t) ~= old and
     (dl(t) > 0 or string.sub(t, 1, 16) ~= inst or tonumber(e) > tonumber(epoch)) then
    return {0, tonumber(x) - now}
  end
  if s and tonumber(s) > now then return {0, tonumber(s) - now} end
  if sid ~= '' and ARGV[ab + 7] == '1' then
    if redis.call('HGET', rk, 'o') ~= inst then return {0, -3} end
    redis.call('HSET', rk, k, '1')
  end
  f = f and tonumber(f) + 1 or math.floor(now / 100) * 100000 + 1
  local d = tonumber(ARGV[ab + 8])
  local v = d > 0 and tok .. ' ' .. d or tok
  if sid ~= '' then
    redis.call('HSET', k, 't', v, 'x', now + lease + d, 'f', f, 'e', epoch, 'si', sid, 'n', 1,
               'h:' .. sid, ARGV[ab + 6])
  else
    redis.call('HSET', k, 't', v, 'x', now + lease + d, 'f', f, 'e', epoch)
  end
  if r then redis.call('HDEL', k, 'r', 'rx') end
  redis.call('PEXPIRE', k, lease + d + idle)
  return {f, 0, (w and w ~= inst) and 1 or 0}
end
local r = {}
for i = 1, #KEYS / 2 do r[i] = one(KEYS[2 * i - 1], KEYS[2 * i], 3 + (i - 1) * 8) end
return r
