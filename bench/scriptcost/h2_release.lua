-- bench/scriptcost: the release of h2_acquire.lua's holds. The session's
-- entry h:SID stays (it is the session's adoption count on this key, for
-- as long as the hash lives); the holder's fields go. KEYS: one hash per
-- item. ARGV: instance, channel, then per item: token, key.
local function tk(v) return v and string.sub(v, 1, 32) end
local inst, chan = ARGV[1], ARGV[2]
local function one(k, ab)
  local g = redis.call('HMGET', k, 't', 'w')
  if tk(g[1]) ~= ARGV[ab + 1] then return 0 end
  redis.call('HDEL', k, 't', 'x', 'e', 'si', 'n')
  if g[2] then
    redis.call('HDEL', k, 'w')
    redis.call('PUBLISH', chan, ARGV[ab + 2])
  end
  return 1
end
local r = {}
for i = 1, #KEYS do r[i] = one(KEYS[i], 2 + (i - 1) * 2) end
return r
