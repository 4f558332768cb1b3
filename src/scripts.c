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
	/* KEYS: lock, fence counter, waiting flag. ARGV: token, lease ms, old
	 * token or "", "1" if the caller waits. Returns {fence, 0, waiting}
	 * when set (waiting: 1 if a waiter elsewhere raised the flag), {0,
	 * pttl} when another token holds it; a caller that waits raises the
	 * flag so that the release is announced. */
	[SCR_ACQUIRE] =
		"local v = redis.call('GET', KEYS[1])\n"
		"if v == false or v == ARGV[3] then\n"
		"  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"
		"  if redis.call('EXISTS', KEYS[2]) == 0 then\n"
		"    local t = redis.call('TIME')\n"
		"    redis.call('SET', KEYS[2], t[1] .. string.sub('000000' .. t[2], -6))\n"
		"  end\n"
		"  return {redis.call('INCR', KEYS[2]), 0, redis.call('EXISTS', KEYS[3])}\n"
		"end\n"
		"local ttl = redis.call('PTTL', KEYS[1])\n"
		"if ARGV[4] == '1' then\n"
		"  redis.call('SET', KEYS[3], '1', 'PX', math.max(ttl, 0) + 1000)\n"
		"end\n"
		"return {0, ttl}\n",
	/* KEYS: lock, waiting flag. ARGV: token, channel, key. Returns 1 if
	 * deleted; announces it only when someone waits. */
	[SCR_RELEASE] = "if redis.call('GET', KEYS[1]) == ARGV[1] then\n"
			"  redis.call('DEL', KEYS[1])\n"
			"  if redis.call('DEL', KEYS[2]) == 1 then\n"
			"    redis.call('PUBLISH', ARGV[2], ARGV[3])\n"
			"  end\n"
			"  return 1\n"
			"end\n"
			"return 0\n",
	/* KEYS: locks. ARGV: lease ms, then one token per key. Per key:
	 * 1 extended, 2 written back (was missing), 0 held by another. */
	[SCR_RENEW] = "local r = {}\n"
		      "for i = 1, #KEYS do\n"
		      "  local v = redis.call('GET', KEYS[i])\n"
		      "  if v == ARGV[i + 1] then\n"
		      "    redis.call('PEXPIRE', KEYS[i], ARGV[1]); r[i] = 1\n"
		      "  elseif v == false then\n"
		      "    redis.call('SET', KEYS[i], ARGV[i + 1], 'PX', ARGV[1]); r[i] = 2\n"
		      "  else\n"
		      "    r[i] = 0\n"
		      "  end\n"
		      "end\n"
		      "return r\n",
	/* KEYS: fence counter. ARGV: value. Returns the counter afterwards. */
	[SCR_RAISE] = "local c = redis.call('GET', KEYS[1])\n"
		      "if c == false or tonumber(c) < tonumber(ARGV[1]) then\n"
		      "  redis.call('SET', KEYS[1], ARGV[1])\n"
		      "  return tonumber(ARGV[1])\n"
		      "end\n"
		      "return tonumber(c)\n",
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
