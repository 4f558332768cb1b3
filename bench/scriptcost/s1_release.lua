-- bench/scriptcost: the release of s1_acquire.lua's holds, plain or
-- resumable alike (today's plain release: MGET, DEL): a resumable hold's
-- entry goes with its lock, and its key stays in the session's index.
-- KEYS: one lock per item. ARGV: instance, channel, then per item: token,
-- key.
local function tk(v) return v and string.sub(v, 1, 32) end
local inst, chan = ARGV[1], ARGV[2]
local function one(k, ab)
  local g = redis.call('MGET', k, k .. ' waiting')
  if tk(g[1]) ~= ARGV[ab + 1] then return 0 end
  redis.call('DEL', k)
  if g[2] then
    redis.call('DEL', k .. ' waiting')
    redis.call('PUBLISH', chan, ARGV[ab + 2])
  end
  return 1
end
local r = {}
for i = 1, #KEYS do r[i] = one(KEYS[i], 2 + (i - 1) * 2) end
return r
