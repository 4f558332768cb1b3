/* scripts: the Lua scripts lockd runs on every master.
 *
 * Tokens are 32 hex characters, never empty, so "" stands for "no old
 * token" in ACQUIRE. Fence counters that do not exist yet start at the
 * master's clock in microseconds (TIME), so a master that restarted empty
 * still hands out fences above the ones it issued before. */
#include "config.h"

#include <string.h>

#include "scripts.h"

static const char *const bodies[SCR_COUNT] = {
	/* KEYS: lock, fence counter, waiting flag, reservation. ARGV: token,
	 * lease ms, old token or "", "1" if the caller waits, instance, fence
	 * idle ms (the counter expires that long after the last grant).
	 * Returns {fence, 0, waiting} when set (waiting: 1 if a waiter on
	 * another lockd raised the flag), {0, pttl} when another token holds
	 * it or a release reserved it for a waiter on another lockd. A caller
	 * that waits raises the flag (with its instance) so that the next
	 * release is announced and reserved for it. A token of our own
	 * instance is stale (no session of ours holds the key while we ask
	 * for it): it is overwritten. */
	[SCR_ACQUIRE] =
		"local function wait_flag(ttl)\n"
		"  if ARGV[4] == '1' then\n"
		"    redis.call('SET', KEYS[3], ARGV[5], 'PX', math.max(ttl, 0) + 1000)\n"
		"  end\n"
		"end\n"
		"local res = redis.call('GET', KEYS[4])\n"
		"if res and res ~= ARGV[5] then\n"
		"  local ttl = redis.call('PTTL', KEYS[4])\n"
		"  wait_flag(ttl)\n"
		"  return {0, ttl}\n"
		"end\n"
		"local v = redis.call('GET', KEYS[1])\n"
		"if v == false or v == ARGV[3] or string.sub(v, 1, 16) == ARGV[5] then\n"
		"  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
		"  if res then redis.call('DEL', KEYS[4]) end\n"
		"  if redis.call('EXISTS', KEYS[2]) == 0 then\n"
		"    local t = redis.call('TIME')\n"
		"    redis.call('SET', KEYS[2], t[1] .. string.sub('000000' .. t[2], -6))\n"
		"  end\n"
		"  local f = redis.call('INCR', KEYS[2])\n"
		"  redis.call('PEXPIRE', KEYS[2], ARGV[6])\n"
		"  local w = redis.call('GET', KEYS[3])\n"
		"  return {f, 0, (w and w ~= ARGV[5]) and 1 or 0}\n"
		"end\n"
		"local ttl = redis.call('PTTL', KEYS[1])\n"
		"wait_flag(ttl)\n"
		"return {0, ttl}\n",
	/* KEYS: lock, waiting flag, reservation. ARGV: token, channel, key,
	 * flag ms, instance, reserve ms. Returns 1 if deleted. A release that
	 * a waiter on another lockd asked for is announced and reserved for
	 * that lockd for reserve ms (else the releasing lockd, closer to its
	 * clients, would win it back every time); flag ms > 0 raises the flag
	 * for our own waiters. */
	[SCR_RELEASE] = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
			"  redis.call('DEL', KEYS[1])\n"
			"  local w = redis.call('GET', KEYS[2])\n"
			"  if w then\n"
			"    redis.call('DEL', KEYS[2])\n"
			"    redis.call('PUBLISH', ARGV[2], ARGV[3])\n"
			"    if w ~= ARGV[5] then\n"
			"      redis.call('SET', KEYS[3], w, 'PX', ARGV[6])\n"
			"    end\n"
			"  end\n"
			"  if tonumber(ARGV[4]) > 0 then\n"
			"    redis.call('SET', KEYS[2], ARGV[5], 'PX', ARGV[4])\n"
			"  end\n"
			"  return 1\n"
			"end\n"
			"return 0\n",
	/* KEYS: locks. ARGV: lease ms, then one token per key. Per key:
	 * 1 extended, 2 written back (missing, or a stale token of ours), 0
	 * held by another. */
	[SCR_RENEW] = "local r = {}\n"
		      "for i = 1, #KEYS do\n"
		      "  local v = redis.call('GET', KEYS[i])\n"
		      "  if v == ARGV[i + 1] then\n"
		      "    redis.call('PEXPIRE', KEYS[i], ARGV[1]); r[i] = 1\n"
		      "  elseif v == false or string.sub(v, 1, 16) == string.sub(ARGV[i + 1], 1, 16) then\n"
		      "    redis.call('SET', KEYS[i], ARGV[i + 1], 'PX', ARGV[1]); r[i] = 2\n"
		      "  else\n"
		      "    r[i] = 0\n"
		      "  end\n"
		      "end\n"
		      "return r\n",
	/* KEYS: fence counter. ARGV: value, fence idle ms. Returns the
	 * counter afterwards (a grant: its idle time starts again). */
	[SCR_RAISE] = "local c = redis.call('GET', KEYS[1])\n"
		      "if c == false or tonumber(c) < tonumber(ARGV[1]) then\n"
		      "  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
		      "  return tonumber(ARGV[1])\n"
		      "end\n"
		      "redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"
		      "return tonumber(c)\n",
	/* KEYS: fence counters. ARGV: one value per key, then fence idle ms,
	 * then "1" to raise each counter to at least the master's clock in
	 * microseconds too (a catch-up after a majority lost its data: the
	 * values read may be stale, the clock is above every fence issued
	 * before). Returns how many counters it raised. */
	[SCR_RAISE_MANY] = "local n = #KEYS\n"
			   "local floor = 0\n"
			   "if ARGV[n + 2] == '1' then\n"
			   "  local t = redis.call('TIME')\n"
			   "  floor = tonumber(t[1] .. string.sub('000000' .. t[2], -6))\n"
			   "end\n"
			   "local r = 0\n"
			   "for i = 1, n do\n"
			   "  local c = redis.call('GET', KEYS[i])\n"
			   "  local v = math.max(tonumber(ARGV[i]), floor)\n"
			   "  if c == false or tonumber(c) < v then\n"
			   "    redis.call('SET', KEYS[i], string.format('%.0f', v), 'PX', ARGV[n + 1])\n"
			   "    r = r + 1\n"
			   "  end\n"
			   "end\n"
			   "return r\n",
	/* KEYS: n locks, then their n waiting flags, then their n
	 * reservations. ARGV: channel, instance, reserve ms, then n tokens,
	 * then the n keys. SCR_RELEASE with flag ms 0, for each key; returns
	 * how many it deleted. */
	[SCR_RELEASE_MANY] = "local n = #KEYS / 3\n"
			     "local r = 0\n"
			     "for i = 1, n do\n"
			     "  if redis.call('GET', KEYS[i]) == ARGV[3 + i] then\n"
			     "    redis.call('DEL', KEYS[i]); r = r + 1\n"
			     "    local w = redis.call('GET', KEYS[n + i])\n"
			     "    if w then\n"
			     "      redis.call('DEL', KEYS[n + i])\n"
			     "      redis.call('PUBLISH', ARGV[1], ARGV[3 + n + i])\n"
			     "      if w ~= ARGV[2] then\n"
			     "        redis.call('SET', KEYS[2 * n + i], w, 'PX', ARGV[3])\n"
			     "      end\n"
			     "    end\n"
			     "  end\n"
			     "end\n"
			     "return r\n",
};

static char shas[SCR_COUNT][41];

const char *script_body(enum script_id id) { return bodies[id]; }

const char *script_sha(enum script_id id) { return shas[id][0] ? shas[id] : NULL; }

void script_set_sha(enum script_id id, const char *sha, size_t len)
{
	if (len == 40) {
		memcpy(shas[id], sha, 40);
		shas[id][40] = '\0';
	}
}
