/* scripts: the Lua scripts lockd runs on every master.
 *
 * Tokens are 32 hex characters, never empty, so "" stands for "no old
 * token" in ACQUIRE; their first 16 are the lockd instance, their last 5
 * the n of a PERMITS n grant (0 for any other: WHO, 1.4). Fence counters
 * that do not exist yet start at the master's clock in microseconds
 * (TIME), so a master that restarted empty still hands out fences above
 * the ones it issued before. Rounded down to FENCE_START_US, so that the
 * masters of one grant of a new key start it at the same value (their
 * clocks read microseconds apart, a tenth of a second apart only across a
 * boundary): the grant then needs no write-back round to bring the lower
 * counters up to its fence (SCR_RAISE, 2 commands and a script on each of
 * them: about 1 in 5 of the Redis commands of a cycle on a new key). What
 * the rounding gives up is covered twice over: a counter starts again only
 * locks.fence_idle_ms (at least 1000) after its key's last grant, and a
 * master that restarted empty is out for redis.restart_exclusion_ms
 * (default the lease, at least 100 ms) before it counts.
 *
 * What a key K holds on a master (P: redis.key_prefix):
 *   P K            the key's lock: a plain lock, or permit 0 (the token)
 *   P K permit I   permit I >= 1, a lock of its own (the token)
 *   P K shared     the shared holders: a sorted set of tokens, each
 *                  scored with the end of its lease in the master's
 *                  clock (ms); members whose lease ended are pruned by
 *                  every script that touches it, and the set expires no
 *                  sooner than its longest lease
 *   P K fence      the fence counter, one for every kind of hold
 *   P K waiting    a waiter elsewhere asked for the next release (instance)
 *   P K reserved   a release kept a moment for that waiter's instance
 *   P K xwaiting   an exclusive waiter (instance) waits for the shared
 *                  holders to leave: other instances admit no new ones
 * Conflicts, checked on each master (a majority then protects every pair):
 * the key's lock against any other token and against live shared holders
 * of another instance; a shared hold against the key's lock of another
 * instance; a permit I >= 1 only against another token of its own key.
 *   P gen INST     this lockd's connection epoch on this master (SCR_GEN)
 *   P name INST    this lockd's name (1.4), for WHO on every lockd: a SET
 *                  of master.c's at each handshake, never per grant
 * A token (or member) of our own instance that we did not name is stale:
 * lockd never asks for what one of its sessions holds. But only for a
 * request written on lockd's current connection to this master: one
 * written on a connection lockd gave up on can reach the master late (the
 * kernel still delivers what it had sent, after a partition heals) and
 * must take nothing of ours for stale, since lockd may have granted it
 * since. Each connection's handshake raises "P gen INST" to the epoch
 * lockd had then (master_epoch), and each request carries the epoch it
 * was written at: the request is current when its epoch is at least the
 * key's (the key is read only when a token of ours is in the way). Kinds
 * as the scripts take them: "x" the key's lock, "p" a permit >= 1, "s"
 * shared.
 *
 * Lock-delay (1.4). A lock (the key's or a permit's) with a delay of D ms
 * holds the value "TOKEN D" (the token, a space, D in decimal) and lives
 * lease + D ms on the master; without one, its value is the bare token,
 * as before 1.4. Why there: it is the write a grant, a renewal, a
 * write-back and an adoption make anyway (SET ... PX, PEXPIRE), so the
 * delay costs no command, and every reader of the lock (STATUS, WHO,
 * LEADER, ACQUIRE, adoption) has it in the GET it already makes: the hold
 * lasts while PTTL > D, it is in its delay while 0 < PTTL <= D. Not in the
 * session record: a plain session has none, and a reader of the key
 * (another lockd's ACQUIRE) must see the delay without it. tk(v) (the
 * first 32 characters) is what every compare-and-delete and token match
 * compares, so instance = the first 16 hex and the permits' n = characters
 * 28-32 read as before. A lockd of a build before 1.4 compares whole
 * values: to it a delayed lock is a token it does not know, busy for its
 * PTTL (lease + delay): it grants nothing a new lockd holds or keeps in
 * its delay (doc/design.md, "Lock-delay"). A token of ours with a delay
 * is never taken for stale by ACQUIRE (a lapsed hold of this lockd must
 * keep its delay); RENEW writes over one (a hold of ours that a majority
 * granted since: that delay ran out where it was granted). A shared member
 * has no value: shared holds have no delay. */
#include "config.h"

#include <string.h>

#include "scripts.h"

/* Fresh fence counters start at the master's clock rounded down to this
 * (microseconds): see the head comment. */
#define FENCE_START_US "100000"

/* The master's clock in ms, as scores of the shared set are; and a
 * lock's value read (1.4): tk(v) its token (the first 32 characters),
 * dl(v) its lock-delay in ms (0 without one), delayed(v, pttl) whether a
 * lock whose key has pttl ms left is in its delay (its lease ran out). */
#define LUA_NOW                                                                                    \
	"local function clock()\n"                                                                 \
	"  local t = redis.call('TIME')\n"                                                         \
	"  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"                     \
	"end\n" LUA_TOK
#define LUA_TOK                                                                                    \
	"local function tk(v) return v and string.sub(v, 1, 32) end\n"                             \
	"local function dl(v) return v and tonumber(string.sub(v, 34)) or 0 end\n"                 \
	"local function delayed(v, pttl) local d = dl(v); return d > 0 and pttl <= d end\n"

/* The connection epoch on a cluster entry (doc/cluster.md, "The choice:
 * slot by slot"): its key is per slot ("{T}P gen INST"), and no handshake
 * can raise 16384 of them, so a request of a cluster entry carries its
 * epoch as "+E" and each script that writes a token raises its slot's key
 * to E in the same script (a grant, a renewal's write-back). Then the
 * head comment's argument holds per slot: every token lockd wrote in a
 * slot since it gave a connection up was written by a script that raised
 * the slot's key above that connection's epochs, so a late request of it
 * finds the key newer than itself and takes no token of ours for stale.
 * A slot whose key is missing (never raised, or expired an hour after its
 * last raise) makes no request current: a stale token of ours there waits
 * for its own expiry, and the next grant raises the key. A standalone
 * master's requests carry "E" (its handshake raised its key): nothing
 * written, one byte compared. */
#define LUA_GEN_BY_USE                                                                             \
	"local function gen_by_use(gk, e)\n"                                                       \
	"  if string.byte(e) ~= 43 then return end\n"                                              \
	"  local g = redis.call('GET', gk)\n"                                                      \
	"  if g == false or tonumber(g) < tonumber(e) then\n"                                      \
	"    redis.call('SET', gk, string.sub(e, 2), 'PX', " SCR_GEN_EXPIRE_MS ")\n"               \
	"  end\n"                                                                                  \
	"end\n"

/* Positions: enum acq_arg (scripts.h).
 * KEYS: shared, the epoch; the call's own, the key (K, "P K": the lock of
 * kinds "x" and "s", and what the others are named after: the permit's
 * lock "K permit I", the fence counter "K fence", the waiting flag "K
 * waiting", the reservation "K reserved", the shared set "K shared", the
 * exclusive-waiting flag "K xwaiting"), the session record. ARGV:
 * shared, instance, fence idle ms, epoch; the call's own, token, lease
 * ms, old token or "", "1" if the caller waits ("2": and it raised the
 * exclusive-waiting flag before), kind, permit, record field, delay.
 * ours(v): a token of ours that this request may take for stale (see the
 * head comment; the epoch is the call's, so it is read once). Returns
 * {fence, 0, waiting} when granted (waiting: 1 if a waiter on another
 * lockd raised the flag), {0, pttl} when another holder has it or a
 * release reserved it for a waiter on another lockd ({0, pttl, 0, 1} when
 * it raised the exclusive-waiting flag). A caller that waits raises the
 * flag (with its instance) so that the next release is announced and
 * reserved for it; an exclusive one that live shared holders keep out
 * raises the exclusive-waiting flag too and is told to come back within
 * 500 ms to keep it up. A busy answer drops the old token (a handoff's
 * release side).
 * Redis commands of a plain grant, 4: MGET (reservation, lock, waiting
 * flag: one read), EXISTS (live shared holders keep an exclusive lock
 * out: a sorted set, which MGET cannot see), SET of the lock (without
 * NX: its value may be a stale token of ours), INCR of the fence. A
 * counter that did not exist starts from the clock (TIME) and gets its
 * expiry, fence idle ms, there and then: a grant does not push it back
 * (a PEXPIRE per grant was 1 in 7 of the Redis commands of a plain
 * cycle). So a busy key's counter lapses fence idle ms after it started
 * and starts again at the clock: above every fence it issued, since it
 * grew by one a grant, far less than a microsecond of clock each, and it
 * started at least fence idle ms (>= 1000) less 100 ms of rounding ago.
 * That is the argument the idle lapse already rested on; the restarted
 * counters of one key's masters differ for a moment (a write-back round)
 * once per fence idle ms. A write-back (SCR_RAISE) does give its counter
 * fence idle ms again, so a key whose grants keep needing write-backs
 * (two lockd contending for it on a loaded machine) restarts later than
 * that, or not at all while they last: the same argument holds for a
 * counter of any age (test_upgrade.c, upgrade_fence_counter_restarts). */
#define ACQUIRE_FNS                                                                                \
	LUA_GEN_BY_USE                                                                             \
	"local eg_cur\n"                                                                           \
	"local function ours(v, inst)\n"                                                           \
	"  if string.sub(v, 1, 16) ~= inst then return false end\n"                                \
	"  if eg_cur == nil then\n"                                                                \
	"    local g = redis.call('GET', KEYS[1])\n"                                               \
	"    eg_cur = g ~= false and tonumber(ARGV[3]) >= tonumber(g)\n"                           \
	"  end\n"                                                                                  \
	"  return eg_cur\n"                                                                        \
	"end\n"                                                                                    \
	"local function busy(lk, wk, ab, inst, ttl, d)\n"                                          \
	"  if ARGV[ab + 3] ~= '' and tk(redis.call('GET', lk)) == ARGV[ab + 3] then\n"             \
	"    redis.call('DEL', lk)\n"                                                              \
	"  end\n"                                                                                  \
	"  if ARGV[ab + 4] ~= '0' then\n"                                                          \
	"    redis.call('SET', wk, inst, 'PX', math.max(ttl, 0) + 1000)\n"                         \
	"  end\n"                                                                                  \
	"  if d then return {0, ttl, 0, 0, 1} end\n"                                               \
	"  return {0, ttl}\n"                                                                      \
	"end\n"
#define ACQUIRE_LUA                                                                                \
	"local inst, kind, K = ARGV[1], ARGV[ab + 5], KEYS[kb + 1]\n"                              \
	"local lk = kind == 'p' and K .. ' permit ' .. ARGV[ab + 6] or K\n"                        \
	"local rk, rf = KEYS[kb + 2], ARGV[ab + 7]\n"                                              \
	"if rf ~= '' and redis.call('HGET', rk, 'o') ~= inst then return {0, -3} end\n"            \
	"local resk, wk = K .. ' reserved', K .. ' waiting'\n"                                     \
	"local g = redis.call('MGET', resk, lk, wk)\n"                                             \
	"local res, v, w = g[1], g[2], g[3]\n"                                                     \
	"if res and res ~= inst then return busy(lk, wk, ab, inst, redis.call('PTTL', resk)) "     \
	"end\n"                                                                                    \
	"if v and tk(v) ~= ARGV[ab + 3] and (dl(v) > 0 or not ours(v, inst)) then\n"               \
	"  local t = redis.call('PTTL', lk)\n"                                                     \
	"  return busy(lk, wk, ab, inst, t, delayed(v, t))\n"                                      \
	"end\n"                                                                                    \
	"if kind == 's' then\n"                                                                    \
	"  local xk = K .. ' xwaiting'\n"                                                          \
	"  local x = redis.call('GET', xk)\n"                                                      \
	"  if x and x ~= inst then return busy(lk, wk, ab, inst, redis.call('PTTL', xk)) end\n"    \
	"  if v then redis.call('DEL', lk) end\n"                                                  \
	"  local sk, now = K .. ' shared', clock()\n"                                              \
	"  redis.call('ZREMRANGEBYSCORE', sk, '-inf', now)\n"                                      \
	"  redis.call('ZADD', sk, string.format('%.0f', now + tonumber(ARGV[ab + 2])), "           \
	"ARGV[ab + 1])\n"                                                                          \
	"  if redis.call('PTTL', sk) < tonumber(ARGV[ab + 2]) then\n"                              \
	"    redis.call('PEXPIRE', sk, ARGV[ab + 2])\n"                                            \
	"  end\n"                                                                                  \
	"else\n"                                                                                   \
	"  local sk = K .. ' shared'\n"                                                            \
	"  if kind == 'x' and redis.call('EXISTS', sk) == 1 then\n"                                \
	"    local now = clock()\n"                                                                \
	"    redis.call('ZREMRANGEBYSCORE', sk, '-inf', now)\n"                                    \
	"    local m = redis.call('ZRANGE', sk, 0, -1, 'WITHSCORES')\n"                            \
	"    local far = -1\n"                                                                     \
	"    for i = 1, #m, 2 do\n"                                                                \
	"      if ours(m[i], inst) then\n"                                                         \
	"        redis.call('ZREM', sk, m[i])\n"                                                   \
	"      elseif tonumber(m[i + 1]) > far then\n"                                             \
	"        far = tonumber(m[i + 1])\n"                                                       \
	"      end\n"                                                                              \
	"    end\n"                                                                                \
	"    if far >= 0 then\n"                                                                   \
	"      local ttl = far - now\n"                                                            \
	"      if ARGV[ab + 4] ~= '0' then\n"                                                      \
	"        redis.call('SET', K .. ' xwaiting', inst, 'PX', 1500)\n"                          \
	"        busy(lk, wk, ab, inst, ttl)\n"                                                    \
	"        return {0, math.min(ttl, 500), 0, 1}\n"                                           \
	"      end\n"                                                                              \
	"      return busy(lk, wk, ab, inst, ttl)\n"                                               \
	"    end\n"                                                                                \
	"  end\n"                                                                                  \
	"  local d = tonumber(ARGV[ab + 8])\n"                                                     \
	"  redis.call('SET', lk, d > 0 and ARGV[ab + 1] .. ' ' .. d or ARGV[ab + 1], "             \
	"'PX', tonumber(ARGV[ab + 2]) + d)\n"                                                      \
	"  local xk = ARGV[ab + 4] == '2' and K .. ' xwaiting'\n"                                  \
	"  if xk and redis.call('GET', xk) == inst then redis.call('DEL', xk) end\n"               \
	"end\n"                                                                                    \
	"if res then redis.call('DEL', resk) end\n"                                                \
	"local fk = K .. ' fence'\n"                                                               \
	"local f = redis.call('INCR', fk)\n"                                                       \
	"if f == 1 then\n"                                                                         \
	"  local t = redis.call('TIME')\n"                                                         \
	"  f = tonumber(t[1]) * 1000000 + math.floor(tonumber(t[2]) / " FENCE_START_US             \
	") * " FENCE_START_US " + 1\n"                                                             \
	"  redis.call('SET', fk, string.format('%.0f', f), 'PX', ARGV[2])\n"                       \
	"end\n"                                                                                    \
	"if rf ~= '' then\n"                                                                       \
	"  redis.call('HSET', rk, string.sub(rf, 2), ARGV[ab + 1] .. ' ' .. "                      \
	"string.format('%.0f', f) .. ' 1 ' .. string.sub(rf, 1, 1))\n"                             \
	"end\n"                                                                                    \
	"gen_by_use(KEYS[1], ARGV[3])\n"                                                           \
	"return {f, 0, (w and w ~= inst) and 1 or 0}\n"

/* Positions: enum rel_arg (scripts.h).
 * KEYS: the key (K, as for ACQUIRE), the session record. ARGV: shared,
 * instance, channel, reserve ms, the key prefix's length; the call's own,
 * token, flag ms, kind, permit, record field. Returns 1 if it let go. A release of the key (of a
 * permit, or of the last shared holder) that a waiter on another lockd asked for is announced and
 * reserved for that lockd for reserve ms (else the releasing lockd, closer to its clients, would
 * win it back every time); flag ms > 0 raises the flag for our own waiters. Redis commands of a
 * plain release nobody waits for: MGET (lock, waiting flag), DEL.
 * A resumable session's hold leaves its record (HDEL of its field) with
 * the release that let it go: a compare-and-delete that found our token
 * found a hold no adoption re-tokened on this master (an adoption writes
 * the lock and the field in one script), so the field is this hold's,
 * whoever owns the record now; no read of the owner is needed. A release
 * that found nothing leaves the field only where the record is ours (a
 * lapsed hold), as before. (doc/design.md, "Resume and adoption".) */
#define RELEASE_FNS                                                                                \
	"local function unrecord(kb, ab, ok)\n"                                                    \
	"  local rf = ARGV[ab + 5]\n"                                                              \
	"  if rf ~= '' and (ok or redis.call('HGET', KEYS[kb + 2], 'o') == ARGV[1]) then\n"        \
	"    redis.call('HDEL', KEYS[kb + 2], rf)\n"                                               \
	"  end\n"                                                                                  \
	"end\n"
#define RELEASE_LUA                                                                                \
	"local K = KEYS[kb + 1]\n"                                                                 \
	"local wk, w = K .. ' waiting'\n"                                                          \
	"if ARGV[ab + 3] == 's' then\n"                                                            \
	"  local sk = K .. ' shared'\n"                                                            \
	"  if redis.call('ZREM', sk, ARGV[ab + 1]) == 0 then unrecord(kb, ab); return 0 end\n"     \
	"  unrecord(kb, ab, true)\n"                                                               \
	"  redis.call('ZREMRANGEBYSCORE', sk, '-inf', clock())\n"                                  \
	"  if redis.call('EXISTS', sk) == 1 then return 1 end\n"                                   \
	"  w = redis.call('GET', wk)\n"                                                            \
	"else\n"                                                                                   \
	"  local lk = ARGV[ab + 3] == 'p' and K .. ' permit ' .. ARGV[ab + 4] or K\n"              \
	"  local g = redis.call('MGET', lk, wk)\n"                                                 \
	"  if tk(g[1]) ~= ARGV[ab + 1] then unrecord(kb, ab); return 0 end\n"                      \
	"  redis.call('DEL', lk)\n"                                                                \
	"  unrecord(kb, ab, true)\n"                                                               \
	"  w = g[2]\n"                                                                             \
	"end\n"                                                                                    \
	"if w then\n"                                                                              \
	"  redis.call('DEL', wk)\n"                                                                \
	"  redis.call('PUBLISH', ARGV[2], string.sub(K, tonumber(ARGV[4]) + 1))\n"                 \
	"  if w ~= ARGV[1] then\n"                                                                 \
	"    redis.call('SET', K .. ' reserved', w, 'PX', ARGV[3])\n"                              \
	"  end\n"                                                                                  \
	"end\n"                                                                                    \
	"if tonumber(ARGV[ab + 2]) > 0 then\n"                                                     \
	"  redis.call('SET', wk, ARGV[1], 'PX', ARGV[ab + 2])\n"                                   \
	"end\n"                                                                                    \
	"return 1\n"

/* Raise KEYS[1] to ARGV[1] if it is below (or missing), with ARGV[2] ms of
 * expiry either way; returns its value afterwards. A fence counter
 * (SCR_RAISE) and a connection epoch (SCR_GEN) only ever go up. */
#define RAISE_LUA                                                                                  \
	"local c = redis.call('GET', KEYS[1])\n"                                                   \
	"if c == false or tonumber(c) < tonumber(ARGV[1]) then\n"                                  \
	"  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])\n"                                   \
	"  return tonumber(ARGV[1])\n"                                                             \
	"end\n"                                                                                    \
	"redis.call('PEXPIRE', KEYS[1], ARGV[2])\n"                                                \
	"return tonumber(c)\n"

/* A one-item script body is a function of where its own keys and
 * arguments start (KEYS[kb + 1], ARGV[ab + 1]), after the sk keys and sa
 * arguments shared by every call (scripts.h, struct script_shared): the
 * one-item script runs it at sk, sa, the batch form (master.c joins the
 * calls of a loop turn into one) at each run of nk keys and na arguments
 * after those in turn and returns the replies, in order. No table is
 * built per call. */
#define ONE_OF(fns, body, sk, sa)                                                                  \
	LUA_NOW fns "local function one(kb, ab)\n" body "end\nreturn one(" #sk ", " #sa ")\n"
#define BATCH_OF(fns, body, sk, sa, nk, na)                                                        \
	LUA_NOW fns                                                                                \
	    "local function one(kb, ab)\n" body "end\n"                                            \
	    "local sk, sa, nk, na = " #sk ", " #sa ", " #nk ", " #na "\n"                          \
	    "local r = {}\n"                                                                       \
	    "for i = 0, (#KEYS - sk) / nk - 1 do r[i + 1] = one(sk + i * nk, sa + i * na) "        \
	    "end\n"                                                                                \
	    "return r\n"

/* The shared counts and strides of the batch forms are the one-item
 * scripts' (enum acq_arg, enum rel_arg). */
_Static_assert(AA_SHARED_KEYS == 1 && AA_SHARED_ARGS == 3 && AA_INSTANCE - AA_NKEYS - 1 == 3 &&
                   AA_TOKEN - AA_INSTANCE == 3 && AA_ARGC - AA_TOKEN == 8,
               "ACQUIRE: 1 shared key, 2 own, 3 shared arguments, 8 own");
_Static_assert(RA_SHARED_KEYS == 0 && RA_SHARED_ARGS == 4 && RA_INSTANCE - RA_NKEYS - 1 == 2 &&
                   RA_TOKEN - RA_INSTANCE == 4 && RA_ARGC - RA_TOKEN == 5,
               "RELEASE: 2 own keys, 4 shared arguments, 5 own");

/* One hold of a session's record taken over by this instance (SESS_ADOPT
 * and SESS_ADOPT_MORE; ARGV[2] instance, ARGV[3] lease ms, ARGV[4] the key
 * prefix): one(field, value) returns the new value, 1 if the hold is now
 * held for this instance, and the ms its lease has left; nothing for a
 * field that is not a hold. */
#define ADOPT_ONE_LUA                                                                              \
	LUA_NOW "local rk = KEYS[1]\n"                                                             \
	        "local inst, lease, p = ARGV[2], tonumber(ARGV[3]), ARGV[4]\n"                     \
	        "local now\n"                                                                      \
	        "local function one(f, v)\n"                                                       \
	        "  local sp = string.find(f, ' ', 1, true)\n"                                      \
	        "  local tok, fence, cnt, ttl = string.match(v, '^(%S+) (%S+) (%S+) (%S+)$')\n"    \
	        "  if not (sp and tok) then return nil end\n"                                      \
	        "  local kind, permit, key = string.sub(f, 1, 1), string.sub(f, 2, sp - 1), "      \
	        "string.sub(f, sp + 1)\n"                                                          \
	        "  local nt = inst .. string.sub(tok, 17)\n"                                       \
	        "  local ok, left, d = 0, -1, 0\n"                                                 \
	        "  if kind == 's' then\n"                                                          \
	        "    local z = p .. key .. ' shared'\n"                                            \
	        "    now = now or clock()\n"                                                       \
	        "    local sc = redis.call('ZSCORE', z, tok) or redis.call('ZSCORE', z, nt)\n"     \
	        "    if sc and tonumber(sc) > now then\n"                                          \
	        "      local til = ttl == '1' and tonumber(sc) or now + lease\n"                   \
	        "      redis.call('ZREM', z, tok)\n"                                               \
	        "      redis.call('ZADD', z, string.format('%.0f', til), nt)\n"                    \
	        "      if redis.call('PTTL', z) < til - now then redis.call('PEXPIRE', z, til - "  \
	        "now) end\n"                                                                       \
	        "      ok, left = 1, til - now\n"                                                  \
	        "    end\n"                                                                        \
	        "  else\n"                                                                         \
	        "    local lk = p .. key\n"                                                        \
	        "    if permit ~= '0' then lk = lk .. ' permit ' .. permit end\n"                  \
	        "    local cur = redis.call('GET', lk)\n"                                          \
	        "    if tk(cur) == tok or tk(cur) == nt then\n"                                    \
	        "      d = dl(cur)\n"                                                              \
	        "      local ncur = d > 0 and nt .. ' ' .. d or nt\n"                              \
	        "      local pt = (ttl == '1' or d > 0) and redis.call('PTTL', lk) or lease\n"     \
	        "      if pt <= d then\n" /* in its delay: LOST, never adopted (1.4) */            \
	        "        left = 0\n"                                                               \
	        "      elseif ttl == '1' then\n"                                                   \
	        "        left = pt - d\n"                                                          \
	        "        redis.call('SET', lk, ncur, 'KEEPTTL')\n"                                 \
	        "      else\n"                                                                     \
	        "        redis.call('SET', lk, ncur, 'PX', lease + d); left = lease\n"             \
	        "      end\n"                                                                      \
	        "      ok = left > 0 and 1 or 0\n"                                                 \
	        "    end\n"                                                                        \
	        "  end\n"                                                                          \
	        "  local nv = nt .. ' ' .. fence .. ' ' .. cnt .. ' ' .. ttl\n"                    \
	        "  redis.call('HSET', rk, f, nv)\n"                                                \
	        "  return nv, ok, left, d\n"                                                       \
	        "end\n"

static const char *const bodies[SCR_COUNT] = {
    [SCR_ACQUIRE] = ONE_OF(ACQUIRE_FNS, ACQUIRE_LUA, 1, 3),
    [SCR_ACQUIRE_N] = BATCH_OF(ACQUIRE_FNS, ACQUIRE_LUA, 1, 3, 2, 8),
    [SCR_RELEASE] = ONE_OF(RELEASE_FNS, RELEASE_LUA, 0, 4),
    [SCR_RELEASE_N] = BATCH_OF(RELEASE_FNS, RELEASE_LUA, 0, 4, 2, 5),
    /* Counts: RNA_* (scripts.h).
     * KEYS: n locks (the key's or a permit's), then their n shared sets,
     * then their n session records ("" for a version-1 session's hold),
     * then the epoch's key. ARGV: lease ms, the epoch, then one token per
     * item, then one kind per item ('s', 'p', 'x', or 'l': the key's lock
     * held by a leader, 1.3, whose record "P NAME leader" gets the lock's
     * expiry with it, so the record lapses with the lock and never before
     * it; the record's key is the lock's with the suffix, not passed, so
     * that the batch's shape is the same for every hold and a plain lock
     * pays nothing). A token of ours is stale (written over) only for a
     * current request (ACQUIRE_LUA's ours()).
     * A hold of a resumable session is renewed and written back only
     * where its record names this instance (1.2: a session resumed
     * elsewhere is that lockd's, whatever this one still believes).
     * A write-back on a cluster entry raises its slot's connection epoch
     * (LUA_GEN_BY_USE); an extension writes no token and raises nothing.
     * A plain hold has no record: "" (a cluster entry's form of "" is
     * "{T}", a name in the hold's slot that ends with '}', which no
     * record's name does: src/ckey.h).
     * Per item: 1 extended, 2 written back (missing, or a stale token of
     * ours where it should be), 3 a leader's lock extended or written back
     * where its record (its value) is missing (lead.c writes the value back:
     * the renewal does not carry it), 0 held by another (a shared hold: the
     * key's lock of another instance; the key's lock: live shared holders
     * of another instance too). */
    [SCR_RENEW] = LUA_NOW LUA_GEN_BY_USE
    "local n = (#KEYS - 1) / 3\n"
    "local lease = tonumber(ARGV[1])\n"
    "local now, cur, wrote\n"
    "local r = {}\n"
    "local function ours(v, inst)\n"
    "  if string.sub(v, 1, 16) ~= inst then return false end\n"
    "  if cur == nil then\n"
    "    local g = redis.call('GET', KEYS[#KEYS])\n"
    "    cur = g ~= false and tonumber(ARGV[2]) >= tonumber(g)\n"
    "  end\n"
    "  return cur\n"
    "end\n"
    "for i = 1, n do\n"
    "  local val, kind, z, rk = ARGV[i + 2], ARGV[n + i + 2], KEYS[n + i], KEYS[2 * n + i]\n"
    "  local tok, ls = tk(val), lease + dl(val)\n"
    "  local inst = string.sub(tok, 1, 16)\n"
    "  local v = redis.call('GET', KEYS[i])\n"
    "  if rk ~= '' and string.byte(rk, -1) ~= 125 and redis.call('HGET', rk, 'o') ~= inst then\n"
    "    r[i] = 0\n"
    "  elseif kind == 's' then\n"
    "    now = now or clock()\n"
    "    redis.call('ZREMRANGEBYSCORE', z, '-inf', now)\n"
    "    if redis.call('ZSCORE', z, tok) then\n"
    "      r[i] = 1\n"
    "    elseif v and not ours(v, inst) then\n"
    "      r[i] = 0\n"
    "    else\n"
    "      if v then redis.call('DEL', KEYS[i]) end\n"
    "      r[i] = 2; wrote = true\n"
    "    end\n"
    "    if r[i] > 0 then\n"
    "      redis.call('ZADD', z, string.format('%.0f', now + lease), tok)\n"
    "      if redis.call('PTTL', z) < lease then redis.call('PEXPIRE', z, lease) end\n"
    "    end\n"
    "  elseif tk(v) == tok then\n"
    "    redis.call('PEXPIRE', KEYS[i], ls); r[i] = 1\n"
    "    if kind == 'l' and redis.call('PEXPIRE', KEYS[i] .. ' leader', ls) == 0 then\n"
    "      r[i] = 3\n"
    "    end\n"
    "  elseif v == false or ours(v, inst) then\n"
    "    r[i] = 2\n"
    "    if kind ~= 'p' and redis.call('EXISTS', z) == 1 then\n"
    "      now = now or clock()\n"
    "      redis.call('ZREMRANGEBYSCORE', z, '-inf', now)\n"
    "      for _, m in ipairs(redis.call('ZRANGE', z, 0, -1)) do\n"
    "        if not ours(m, inst) then r[i] = 0; break end\n"
    "      end\n"
    "    end\n"
    "    if r[i] == 2 then\n"
    "      redis.call('SET', KEYS[i], val, 'PX', ls); wrote = true\n"
    "      if kind == 'l' and redis.call('PEXPIRE', KEYS[i] .. ' leader', ls) == 0 then\n"
    "        r[i] = 3\n"
    "      end\n"
    "    end\n"
    "  else\n"
    "    r[i] = 0\n"
    "  end\n"
    "end\n"
    "if wrote then gen_by_use(KEYS[#KEYS], ARGV[2]) end\n"
    "return r\n",
    /* Positions: enum raise_arg (scripts.h).
     * KEYS: fence counter. ARGV: value, fence idle ms. Returns the
     * counter afterwards (a grant: its idle time starts again). */
    [SCR_RAISE] = "if ARGV[3] ~= '' then\n" /* the granted fence in the session's record */
                  "  local v = redis.call('HGET', KEYS[2], ARGV[3])\n"
                  "  local rest = v and string.sub(v, 1, 32) == ARGV[4] and string.match(v, '^%S+ "
                  "%S+ (.*)$')\n"
                  "  if rest then redis.call('HSET', KEYS[2], ARGV[3], ARGV[4] .. ' ' .. ARGV[1] "
                  ".. ' ' .. rest) end\n"
                  "end\n" RAISE_LUA,
    /* KEYS: fence counters. ARGV: one value per key, then fence idle ms,
     * then "1" to raise each counter to at least the master's clock in
     * microseconds too (a catch-up after a majority lost its data: the
     * values read may be stale, the clock is above every fence issued
     * before). Returns how many counters it raised. */
    [SCR_RAISE_MANY] =
        "local n = #KEYS\n"
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
    /* Counts: RMA_* (scripts.h).
     * KEYS: n locks (the key's or a permit's), then their n waiting
     * flags, n reservations and n shared sets. ARGV: channel, instance,
     * reserve ms, then n tokens, then the n keys, then n kinds.
     * SCR_RELEASE with flag ms 0, for each item; returns how many it let
     * go. */
    [SCR_RELEASE_MANY] = LUA_NOW "local n = #KEYS / 5\n"
                                 "local r = 0\n"
                                 "for i = 1, n do\n"
                                 "  local tok, gone = ARGV[3 + i], false\n"
                                 "  local rk, rf = KEYS[4 * n + i], ARGV[3 + 3 * n + i]\n"
                                 "  if rf ~= '' and redis.call('HGET', rk, 'o') == ARGV[2] then\n"
                                 "    redis.call('HDEL', rk, rf)\n"
                                 "  end\n"
                                 "  if ARGV[3 + 2 * n + i] == 's' then\n"
                                 "    local z = KEYS[3 * n + i]\n"
                                 "    if redis.call('ZREM', z, tok) == 1 then\n"
                                 "      r = r + 1\n"
                                 "      redis.call('ZREMRANGEBYSCORE', z, '-inf', clock())\n"
                                 "      gone = redis.call('EXISTS', z) == 0\n"
                                 "    end\n"
                                 "  elseif tk(redis.call('GET', KEYS[i])) == tok then\n"
                                 "    redis.call('DEL', KEYS[i]); r = r + 1\n"
                                 "    gone = true\n"
                                 "  end\n"
                                 "  if gone then\n"
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
    /* Counts: STA_KEYS (scripts.h).
     * KEYS: the key's lock, its shared set, then permits 1 .. n-1 (none
     * for a plain STATUS). Returns {ms left of the lock, live shared
     * holders, ms left on the longest shared lease or -2, then the ms
     * left of each permit, then the live shared holders' tokens when
     * there are at most STA_MEMBERS_MAX}: a lock's PTTL less its
     * lock-delay while the hold lasts, its PTTL during the delay (1.4:
     * both are STATUS's ttl_ms), -2 when free. The tokens let STATUS
     * count holders granted on different majorities (one on masters 0
     * and 1, one on 1 and 2: two, where the counts say 1, 2, 1).
     * Read-only but for pruning the shared set. */
    [SCR_STATUS] = LUA_NOW "local function ttl(k)\n"
                           "  local t = redis.call('PTTL', k)\n"
                           "  local d = t > 0 and dl(redis.call('GET', k)) or 0\n"
                           "  return t > d and t - d or t\n"
                           "end\n"
                           "local r, m = {ttl(KEYS[1]), 0, -2}, {}\n"
                           "if redis.call('EXISTS', KEYS[2]) == 1 then\n"
                           "  local now = clock()\n"
                           "  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)\n"
                           "  r[2] = redis.call('ZCARD', KEYS[2])\n"
                           "  local top = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')\n"
                           "  if top[2] then r[3] = tonumber(top[2]) - now end\n"
                           "  if r[2] <= " STA_MEMBERS_MAX_S
                           " then m = redis.call('ZRANGE', KEYS[2], 0, -1) end\n"
                           "end\n"
                           "for i = 3, #KEYS do r[#r + 1] = ttl(KEYS[i]) end\n"
                           "for i = 1, #m do r[#r + 1] = m[i] end\n"
                           "return r\n",
    /* Sessions that outlive a connection (1.2). A session's record, the
     * hash "P session ID": o the instance that owns it, s the SHA1 of its
     * secret, g its grace ms, and per hold a field "KINDPERMIT KEY" (the
     * kind x, p or s, the permit, one space, the key: "p3 jobs") whose value is
     * "TOKEN FENCE HOLDS TTL" (TTL 1: a TTL hold). Grants and releases
     * write their hold's field (ACQUIRE_LUA, RELEASE_LUA); these scripts
     * do the rest.
     * SESS_PUT. KEYS: the record. ARGV: instance, the secret ("": keep),
     * grace ("": keep), expiry ms (0: keep), then field, value pairs
     * (holds; "a", the adoption count of a record written back, which
     * only raises the count there: a lower one is an older owner's).
     * Writes where the record is ours, or missing and the secret given.
     * Returns 1 written, 0 not (another lockd owns it, or it is gone). */
    [SCR_SESS_PUT] = "local o = redis.call('HGET', KEYS[1], 'o')\n"
                     "if (o and o ~= ARGV[1]) or (not o and ARGV[2] == '') then return 0 end\n"
                     "redis.call('HSET', KEYS[1], 'o', ARGV[1])\n"
                     "if ARGV[2] ~= '' then\n"
                     "  redis.call('HSET', KEYS[1], 's', redis.sha1hex(ARGV[2]))\n"
                     "end\n"
                     "if ARGV[3] ~= '' then redis.call('HSET', KEYS[1], 'g', ARGV[3]) end\n"
                     "for i = 5, #ARGV - 1, 2 do\n"
                     "  if ARGV[i] ~= 'a' or tonumber(redis.call('HGET', KEYS[1], 'a') or '0') < "
                     "tonumber(ARGV[i + 1]) then\n"
                     "    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])\n"
                     "  end\n"
                     "end\n"
                     "if tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end\n"
                     "return 1\n",
    /* SESS_TOUCH. KEYS: n records. ARGV: instance, then n expiry ms. Per
     * record two numbers: 1 ours (its expiry set), 0 another lockd's, 2
     * missing; then its adoption count "a" (0 if none), -1 for a
     * tombstone (owner "-": the session ended). The count orders owners:
     * each adoption raises it where it lands, so a record of a later
     * owner has a larger one than what an earlier owner left
     * (doc/design.md, interleaving 15). */
    [SCR_SESS_TOUCH] = "local r = {}\n"
                       "for i = 1, #KEYS do\n"
                       "  local h = redis.call('HMGET', KEYS[i], 'o', 'a')\n"
                       "  if h[1] == ARGV[1] then\n"
                       "    redis.call('PEXPIRE', KEYS[i], ARGV[i + 1]); r[2 * i - 1] = 1\n"
                       "  else\n"
                       "    r[2 * i - 1] = h[1] and 0 or 2\n"
                       "  end\n"
                       "  r[2 * i] = h[1] == '-' and -1 or tonumber(h[2] or '0')\n"
                       "end\n"
                       "return r\n",
    /* SESS_END. KEYS: the record. ARGV: instance, keep ms. If ours, the
     * record becomes a tombstone: its owner "-" (no instance), nothing
     * else, for keep ms + its grace. A lockd that still has the session
     * (from before it moved here) then reads "another's" at its touch and
     * drops it; a missing record means a master that lost its data. */
    [SCR_SESS_END] = "if redis.call('HGET', KEYS[1], 'o') == ARGV[1] then\n"
                     "  local g = tonumber(redis.call('HGET', KEYS[1], 'g') or '0')\n"
                     "  redis.call('DEL', KEYS[1])\n"
                     "  redis.call('HSET', KEYS[1], 'o', '-')\n"
                     "  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) + g)\n"
                     "end\n"
                     "return 1\n",
    /* SESS_ADOPT. KEYS: the record. ARGV: enum adopt_arg. {-1}: no
     * such session (no record, an ended one, another secret), {-2}:
     * adopted since SCR_SESS_PEEK read the count (nothing changed either
     * way); else {1, grace, the new count, then per hold: field, value, 1
     * if it now holds for this instance, the ms its lease has left}, or
     * {2, grace, the new count} for a record of more than ADOPT_CHUNK
     * holds, whose holds lockd then takes over ADOPT_CHUNK at a time
     * (HSCAN, SESS_ADOPT_MORE), so that no script's time on the master
     * grows with the session. The secret is checked before anything else
     * is read. The count ("a") makes it a compare-and-set: an adoption
     * that arrives late (lockd gave up on that connection, the client has
     * resumed elsewhere since) finds it moved on. The new count (ARGV[6])
     * is one above every count the first rounds read on a majority, the
     * same on every master, not this record's plus one: masters' counts
     * differ (an adoption that reached a minority), and an owner's rank
     * must be one number, above the owner's before (doc/design.md,
     * interleaving 16). The record names this
     * instance from now on, and each hold still held for the session
     * takes this instance's token (its random part kept): the lockd that
     * had it finds nothing of its own. A TTL hold keeps its expiry, any
     * other gets a new lease.
     * A cluster entry's session (doc/cluster.md, "Sessions on a cluster
     * entry") has a record per slot it holds in, and a home record whose
     * fields "i SLOT" (SESS_INDEX) list those slots: the home record is
     * adopted as above, and its index comes back as entries {"i SLOT",
     * "", 0, -1, 0} among the holds. Each listed slot's record is then
     * adopted with ARGV[5] "": no count to compare, but the new count
     * must be above the record's (a later adoption's ran there first, or
     * this one's did: {-2}); a missing record is created with the
     * secret, ARGV[7] its grace and the new count, so that the lockd the
     * session left, whose grant there is still on its way, finds it
     * another's. */
    [SCR_SESS_ADOPT] = ADOPT_ONE_LUA
    "local h = redis.call('HMGET', rk, 's', 'a', 'g')\n"
    "local slot = ARGV[5] == ''\n"
    "if slot and not ((tonumber(ARGV[6]) or 0) > 0 and tonumber(ARGV[7] or '')) then\n"
    "  return redis.error_reply('ERR a slot adoption needs a count above 0 and a grace')\n"
    "end\n"
    "if slot and not h[1] and redis.call('EXISTS', rk) == 0 then\n"
    "  h = {redis.sha1hex(ARGV[1]), '0', ARGV[7]}\n"
    "  redis.call('HSET', rk, 's', h[1], 'g', h[3])\n"
    "end\n"
    "if h[1] ~= redis.sha1hex(ARGV[1]) then return {-1} end\n"
    "if slot then\n"
    "  if tonumber(h[2] or '0') >= tonumber(ARGV[6]) then return {-2} end\n"
    "elseif (h[2] or '0') ~= ARGV[5] then return {-2} end\n"
    "local a = tonumber(ARGV[6])\n"
    "redis.call('HSET', rk, 'a', ARGV[6])\n"
    "local g = tonumber(h[3] or '0')\n"
    "redis.call('HSET', rk, 'o', inst)\n"
    "redis.call('PEXPIRE', rk, lease + g)\n"
    "if redis.call('HLEN', rk) > " ADOPT_CHUNK_S " + 4 then return {2, g, a} end\n"
    "local all = redis.call('HGETALL', rk)\n"
    "local r = {1, g, a}\n"
    "for i = 1, #all, 2 do\n"
    "  local nv, ok, left, d = one(all[i], all[i + 1])\n"
    "  if nv then\n"
    "    r[#r + 1] = all[i]; r[#r + 1] = nv; r[#r + 1] = ok; r[#r + 1] = left\n"
    "    r[#r + 1] = d\n"
    "  elseif string.sub(all[i], 1, 2) == 'i ' then\n"
    "    r[#r + 1] = all[i]; r[#r + 1] = ''; r[#r + 1] = 0; r[#r + 1] = -1; r[#r + 1] = 0\n"
    "  end\n"
    "end\n"
    "return r\n",
    /* SESS_ADOPT_MORE. KEYS: the record. ARGV: the count SESS_ADOPT
     * left, instance, lease ms, the key prefix, then field, value pairs
     * as one HSCAN of the record returned them. {-2}: the record
     * names another instance or was adopted again since (nothing changed);
     * else {1, 0, 0, then per hold as SESS_ADOPT}. */
    [SCR_SESS_ADOPT_MORE] =
        ADOPT_ONE_LUA "local m = redis.call('HMGET', rk, 'o', 'a')\n"
                      "if m[1] ~= inst or m[2] ~= ARGV[1] then return {-2} end\n"
                      "local r = {1, 0, 0}\n"
                      "for i = 5, #ARGV - 1, 2 do\n"
                      "  local nv, ok, left, d = one(ARGV[i], ARGV[i + 1])\n"
                      "  if nv then\n"
                      "    r[#r + 1] = ARGV[i]; r[#r + 1] = nv; r[#r + 1] = ok; r[#r + 1] = left\n"
                      "    r[#r + 1] = d\n"
                      "  end\n"
                      "end\n"
                      "return r\n",
    /* Leader election (1.3). A leader's value lives beside its lock in
     * the hash "P NAME leader": t the leader's token, f its fence, e the
     * epoch of its writer and v the value's version (1 at the grant, +1
     * per PROCLAIM), val the value, and r the highest epoch reserved for
     * this leader on this master. It counts only where the lock of NAME
     * holds a token with the same random part as t (a resume on another
     * lockd replaces the instance part of a token, 1.2): a record left by
     * a leader that lapsed means nothing. Values are ordered by (e, v):
     * the lockd that campaigned writes epoch 0, each lockd that adopts
     * the leader reserves an epoch above every one reserved before
     * (EL_EPOCH, on a majority) before it writes, so a value of an
     * earlier lockd, wherever it lingers, is older than every value of a
     * later one, and no (e, v) is written with two values. Every change
     * of a leader or its value is announced on the channel "P elected"
     * with the name; observers read a majority on each notice, so a lost
     * notice costs time, never the last state.
     * EL_PUT. Positions: enum elput_arg. Writes the value where the lock
     * holds the token, unless this or a later value is there already (a
     * write-back then costs two reads): 1; 0 where the lock is not the
     * token's; 2 where a later epoch is reserved (this lockd's leader is
     * an older incarnation: the session moved away and back). A record
     * written expires with the lock, never before it: at the expiry ms
     * given (the lease) or the lock's own, the later (0: none); the
     * leader's renewals (SCR_RENEW, kind 'l') refresh it from there, so
     * a record that its lockd left (shutdown, crash) lapses with the lock. */
    [SCR_EL_PUT] = LUA_TOK
    "if tk(redis.call('GET', KEYS[1])) ~= ARGV[1] then return 0 end\n"
    "local e, v = tonumber(ARGV[8]), tonumber(ARGV[3])\n"
    "local h = redis.call('HMGET', KEYS[2], 't', 'e', 'v', 'r')\n"
    "if h[1] and string.sub(h[1], 17) == string.sub(ARGV[1], 17) then\n"
    "  if tonumber(h[4] or '0') > e then return 2 end\n"
    "  if h[3] and tonumber(h[2] or '0') == e and tonumber(h[3]) >= v then return 1 end\n"
    "end\n"
    "redis.call('HSET', KEYS[2], 't', ARGV[1], 'f', ARGV[2], 'e', ARGV[8], 'v', ARGV[3], "
    "'val', ARGV[4], 'r', ARGV[8])\n"
    "local x = tonumber(ARGV[5])\n"
    "if x > 0 then redis.call('PEXPIRE', KEYS[2], math.max(x, redis.call('PTTL', KEYS[1]))) "
    "end\n"
    "redis.call('PUBLISH', ARGV[6], ARGV[7])\n"
    "return 1\n",
    /* EL_READ. Positions: enum elread_arg. Read-only. {0}: the name is
     * free (or its lock in its lock-delay, 1.4: no leader, LEADER says
     * NONE; a CAMPAIGN's ACQUIRE still finds it busy); {1, counter}: held
     * without a value (a plain lock, live SHARED
     * holders, which keep a CAMPAIGN out as a plain lock does, or a leader
     * whose value is not written there yet: then {1, counter, r}); {2,
     * fence, version, value, counter, epoch, r}: held by the leader of
     * the record. The fence counter is "0" when missing, and so are the
     * epoch and r of a record written before they were. */
    [SCR_EL_READ] = LUA_NOW
    "local l = redis.call('GET', KEYS[1])\n"
    "if l and delayed(l, redis.call('PTTL', KEYS[1])) then return {0} end\n"
    "l = tk(l)\n"
    "if not l then\n"
    "  if redis.call('EXISTS', KEYS[4]) == 0 or\n"
    "     redis.call('ZCOUNT', KEYS[4], string.format('(%.0f', clock()), '+inf') == 0 then\n"
    "    return {0}\n"
    "  end\n"
    "  return {1, redis.call('GET', KEYS[3]) or '0'}\n"
    "end\n"
    "local c = redis.call('GET', KEYS[3]) or '0'\n"
    "local h = redis.call('HMGET', KEYS[2], 't', 'f', 'v', 'val', 'e', 'r')\n"
    "if h[1] and string.sub(h[1], 17) == string.sub(l, 17) then\n"
    "  if h[4] then return {2, h[2], h[3], h[4], c, h[5] or '0', h[6] or '0'} end\n"
    "  return {1, c, h[6] or '0'}\n"
    "end\n"
    "return {1, c}\n",
    /* EL_RESIGN. Positions: enum elres_arg. RELEASE_LUA of the name's
     * lock for its leader, and the leader's record with it (where t is
     * this leader's), only where the lock holds this very token: where an
     * adoption gave the lock to another lockd (1.2), the record is that
     * lockd's leader's now, and the first lockd's release (its grace
     * running out, LOST) must leave it. Announces the release (to a
     * waiter elsewhere, as RELEASE_LUA does) and the change (to
     * observers). Returns 1. */
    [SCR_EL_RESIGN] =
        LUA_TOK "local rk, rf, inst = KEYS[5], ARGV[7], ARGV[4]\n"
                "if rf ~= '' and redis.call('HGET', rk, 'o') == inst then\n"
                "  redis.call('HDEL', rk, rf)\n"
                "end\n"
                "if tk(redis.call('GET', KEYS[1])) ~= ARGV[1] then return 1 end\n"
                "redis.call('DEL', KEYS[1])\n"
                "local w = redis.call('GET', KEYS[2])\n"
                "if w then\n"
                "  redis.call('DEL', KEYS[2])\n"
                "  redis.call('PUBLISH', ARGV[2], ARGV[3])\n"
                "  if w ~= inst then redis.call('SET', KEYS[3], w, 'PX', ARGV[5]) end\n"
                "end\n"
                "redis.call('PUBLISH', ARGV[6], ARGV[3])\n"
                "local t = redis.call('HGET', KEYS[4], 't')\n"
                "if t and string.sub(t, 17) == string.sub(ARGV[1], 17) then\n"
                "  redis.call('DEL', KEYS[4])\n"
                "end\n"
                "return 1\n",
    /* Positions: enum gen_arg (scripts.h). Raised, never lowered: a
     * handshake's write that arrives late (it too may) cannot make the
     * requests of an older connection current again. Returns the key's
     * value afterwards. */
    [SCR_GEN] = RAISE_LUA,
    /* SESS_PEEK. KEYS: the record. The adoption count SCR_SESS_ADOPT
     * compares, "0" before the first. */
    [SCR_SESS_PEEK] = "return redis.call('HGET', KEYS[1], 'a') or '0'\n",
    /* SESS_INDEX (a cluster entry's session, doc/cluster.md, "Sessions on
     * a cluster entry"). KEYS: the session's home record. ARGV: instance,
     * a slot. Adds field "i SLOT" where the record is ours: 1; 0 where it
     * is another lockd's, a tombstone or missing (an adoption took the
     * session over first, or it ended: a grant in that slot must not
     * count). A field with a space whose value is not a hold's four words
     * is no hold to the adoption scripts (ADOPT_ONE_LUA's one). */
    [SCR_SESS_INDEX] = "if redis.call('HGET', KEYS[1], 'o') ~= ARGV[1] then return 0 end\n"
                       "redis.call('HSET', KEYS[1], 'i ' .. ARGV[2], '1')\n"
                       "return 1\n",
    /* EL_EPOCH. Positions: enum elepoch_arg. Reserves an epoch for the
     * values of the leader whose lock holds the token (the lockd that
     * adopted it, 1.2), where no epoch as high is reserved: {1}; {0}
     * where the lock is not the token's; {2, r} where r, as high or
     * higher, is reserved already (another lockd's, or an earlier try). A
     * record of another leader (it means nothing) makes room for one
     * with the reservation alone, which reads as no value. The record
     * gets the lock's expiry (SCR_EL_PUT). */
    [SCR_EL_EPOCH] = LUA_TOK "if tk(redis.call('GET', KEYS[1])) ~= ARGV[1] then return {0} end\n"
                             "local h = redis.call('HMGET', KEYS[2], 't', 'r')\n"
                             "if h[1] and string.sub(h[1], 17) == string.sub(ARGV[1], 17) then\n"
                             "  local r = tonumber(h[2] or '0')\n"
                             "  if r >= tonumber(ARGV[2]) then return {2, h[2] or '0'} end\n"
                             "else\n"
                             "  redis.call('DEL', KEYS[2])\n"
                             "  redis.call('HSET', KEYS[2], 't', ARGV[1])\n"
                             "end\n"
                             "redis.call('HSET', KEYS[2], 'r', ARGV[2])\n"
                             "if redis.call('PTTL', KEYS[2]) < redis.call('PTTL', KEYS[1]) then\n"
                             "  redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))\n"
                             "end\n"
                             "return {1}\n",
    /* WHO (1.4). Positions: enum who_arg. Read only: it prunes nothing,
     * so a shared holder counts while its score (the end of its lease)
     * is ahead of the master's clock. Returns {the key's lock's token or
     * "", the fence counter or "0", {the live shared holders' tokens},
     * {i, token, ... for each permit i held, ARGV[1] <= i < ARGV[2]}, the
     * ms left on the key's lock's delay or 0}: a lock in its lock-delay
     * (1.4) is no hold, its token is not given.
     * A permit's key is built here from the lock's (the same hash slot,
     * as ADOPT_ONE_LUA's); one MGET reads them all (WHO_CHUNK at most). */
    [SCR_WHO] = LUA_NOW
    "local function hold(k, v)\n"
    "  if v and delayed(v, redis.call('PTTL', k)) then return nil end\n"
    "  return tk(v)\n"
    "end\n"
    "local l = redis.call('GET', KEYS[1])\n"
    "local r = {hold(KEYS[1], l) or '', redis.call('GET', KEYS[3]) or '0', {}, {}, 0}\n"
    "if l and not hold(KEYS[1], l) then r[5] = redis.call('PTTL', KEYS[1]) end\n"
    "if redis.call('EXISTS', KEYS[2]) == 1 then\n"
    "  r[3] = redis.call('ZRANGEBYSCORE', KEYS[2], string.format('(%.0f', clock()), '+inf')\n"
    "end\n"
    "local from, to, names = tonumber(ARGV[1]), tonumber(ARGV[2]), {}\n"
    "for i = from, to - 1 do names[#names + 1] = KEYS[1] .. ' permit ' .. i end\n"
    "if #names > 0 then\n"
    "  local v, p = redis.call('MGET', unpack(names)), r[4]\n"
    "  for k = 1, #v do\n"
    "    local t = v[k] and hold(names[k], v[k])\n"
    "    if t then p[#p + 1] = from + k - 1; p[#p + 1] = t end\n"
    "  end\n"
    "end\n"
    "return r\n",
};

static char shas[SCR_COUNT][41];

const char *script_body(enum script_id id)
{
	return bodies[id];
}

int script_batch_of(enum script_id id)
{
	return id == SCR_ACQUIRE ? SCR_ACQUIRE_N : id == SCR_RELEASE ? SCR_RELEASE_N : -1;
}

struct script_shared script_shared_of(enum script_id id)
{
	switch (id) {
	case SCR_ACQUIRE:
	case SCR_ACQUIRE_N:
		return (struct script_shared){AA_SHARED_KEYS, AA_SHARED_ARGS};
	case SCR_RELEASE:
	case SCR_RELEASE_N:
		return (struct script_shared){RA_SHARED_KEYS, RA_SHARED_ARGS};
	default:
		return (struct script_shared){0, 0};
	}
}

const char *script_sha(enum script_id id)
{
	return shas[id][0] ? shas[id] : NULL;
}

void script_set_sha(enum script_id id, const char *sha, size_t len)
{
	if (len == 40) {
		memcpy(shas[id], sha, 40);
		shas[id][40] = '\0';
	}
}

int script_writes(enum script_id id)
{
	switch (id) {
	case SCR_ACQUIRE:
	case SCR_ACQUIRE_N:
	case SCR_RENEW:
	case SCR_RAISE:
	case SCR_RAISE_MANY:
	case SCR_SESS_PUT:
	case SCR_SESS_TOUCH:
	case SCR_SESS_ADOPT:
	case SCR_SESS_ADOPT_MORE:
	case SCR_SESS_INDEX:
	case SCR_EL_PUT:
	case SCR_EL_EPOCH:
		return 1;
	default:
		return 0;
	}
}
