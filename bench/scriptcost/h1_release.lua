-- bench/scriptcost: the release of h1_acquire.lua's holds. KEYS: one hash per
-- item. ARGV: instance, channel, then per item: token, key, record field.
local function tk(v) return v and string.sub(v, 1, 32) end
local inst, chan = ARGV[1], ARGV[2]
local function one(k, ab)
  local tok, rf = ARGV[ab + 1], ARGV[ab + 3]
  local g = redis.call('HMGET', k, 't', 'w')
  if tk(g[1]) ~= tok then return 0 end
  if rf ~= '' then redis.call('HDEL', k, 't', 'x', 'e', rf) else redis.call('HDEL', k, 't', 'x', 'e') end
  if g[2] then
    redis.call('HDEL', k, 'w')
    redis.call('PUBLISH', chan, ARGV[ab + 2])
  end
  return 1
end
local r = {}
for i = 1, #KEYS do r[i] = one(KEYS[i], 2 + (i - 1) * 3) end
return r
