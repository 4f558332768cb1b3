-- bench/scriptcost: a prototype of one hash per lock (doc/cluster.md), for
-- measuring only: an exclusive grant with its reservation, waiting flag,
-- epoch and lock-delay checks and, for a resumable session, the owner check
-- and the hold's record field in the lock's hash. KEYS: one hash per item.
-- ARGV: instance, fence idle ms, epoch, then per item: token, lease ms, old
-- token, wait flag, record field, session record key, delay ms.
local function clock()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function tk(v) return v and string.sub(v, 1, 32) end
local function dl(v) return v and tonumber(string.sub(v, 34)) or 0 end
local inst, idle, epoch = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now
local function one(k, ab)
  local tok, old, rf = ARGV[ab + 1], ARGV[ab + 3], ARGV[ab + 5]
  local lease = tonumber(ARGV[ab + 2])
  now = now or clock()
  if rf ~= '' and redis.call('HGET', ARGV[ab + 6], 'o') ~= inst then return {0, -3} end
  local g = redis.call('HMGET', k, 't', 'x', 'w', 'r', 'rx', 'f', 'e', 's')
  local t, x, w, r, rx, f, e, s = g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8]
  if r and r ~= inst and tonumber(rx) > now then return {0, tonumber(rx) - now} end
  if t and tonumber(x) > now and tk(t) ~= old and
     (dl(t) > 0 or string.sub(t, 1, 16) ~= inst or tonumber(e) > tonumber(epoch)) then
    return {0, tonumber(x) - now}
  end
  if s and tonumber(s) > now then return {0, tonumber(s) - now} end
  f = f and tonumber(f) + 1 or math.floor(now / 100) * 100000 + 1
  local d = tonumber(ARGV[ab + 7])
  local v = d > 0 and tok .. ' ' .. d or tok
  if rf ~= '' then
    redis.call('HSET', k, 't', v, 'x', now + lease + d, 'f', f, 'e', epoch, rf, tok .. ' ' .. f .. ' 1 x')
  else
    redis.call('HSET', k, 't', v, 'x', now + lease + d, 'f', f, 'e', epoch)
  end
  if r then redis.call('HDEL', k, 'r', 'rx') end
  redis.call('PEXPIRE', k, lease + d + idle)
  return {f, 0, (w and w ~= inst) and 1 or 0}
end
local r = {}
for i = 1, #KEYS do r[i] = one(KEYS[i], 3 + (i - 1) * 7) end
return r
