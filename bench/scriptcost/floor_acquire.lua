-- bench/scriptcost: the floor, node-redlock's own acquire (SET NX PX) for
-- each item of a batch. KEYS: locks; ARGV: one token per lock.
local r = {}
for i = 1, #KEYS do
  r[i] = redis.call('SET', KEYS[i], ARGV[i], 'NX', 'PX', 3000) and 1 or 0
end
return r
