-- bench/scriptcost: the floor's release, compare-and-delete per item.
local r = {}
for i = 1, #KEYS do
  if redis.call('GET', KEYS[i]) == ARGV[i] then redis.call('DEL', KEYS[i]); r[i] = 1 else r[i] = 0 end
end
return r
