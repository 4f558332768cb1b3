/* typed: liblockd's typed requests (lockd_lock(), ..., and the election
 * requests lockd_campaign(), ...: lockd/client.h),
 * built by reply.c from their arguments and queued or called through
 * client.c, and the names of the statuses. */
#include <stdlib.h>

#include "client_int.h"
#include "reply.h"

/* ------------------------------------------------------------ typed requests */

/* Build the request of cmd (reply.c checks the key and the numbers), then
 * lockd_call() it (reply set) or lockd_send() it. */
static int typed(struct lockd_client *c, enum rp_cmd cmd, const char *key, int hold, int wait_ms,
                 int ttl_ms, int timeout_ms, const struct lockd_reply **reply, void *tag)
{
	char sb[512];
	char *req = sb;
	if (!c)
		return LOCKD_EARG;
	long n = rp_format(sb, sizeof(sb), cmd, key, LOCKD_MAX_KEY, hold, wait_ms, ttl_ms);
	if (n < 0)
		return (int)n;
	if ((size_t)n >= sizeof(sb)) {
		req = malloc((size_t)n + 1);
		if (!req)
			return LOCKD_ENOMEM;
		rp_format(req, (size_t)n + 1, cmd, key, LOCKD_MAX_KEY, hold, wait_ms, ttl_ms);
	}
	int rc = reply ? lockd_call(c, req, timeout_ms, reply)
	               : cli_enqueue(c, req, (size_t)n, timeout_ms, tag, W_USER);
	if (req != sb)
		free(req);
	return rc;
}

int lockd_check_key(const char *key)
{
	return rp_check_key(key, LOCKD_MAX_KEY);
}

int lockd_lock(struct lockd_client *c, const char *key, int hold, int wait_ms, int ttl_ms,
               int timeout_ms, const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_LOCK, key, hold, wait_ms, ttl_ms, timeout_ms, reply, NULL);
}

int lockd_trylock(struct lockd_client *c, const char *key, int hold, int ttl_ms, int timeout_ms,
                  const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_TRYLOCK, key, hold, -1, ttl_ms, timeout_ms, reply, NULL);
}

int lockd_unlock(struct lockd_client *c, const char *key, int timeout_ms,
                 const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_UNLOCK, key, 0, -1, 0, timeout_ms, reply, NULL);
}

int lockd_extend(struct lockd_client *c, const char *key, int ttl_ms, int timeout_ms,
                 const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_EXTEND, key, 0, -1, ttl_ms, timeout_ms, reply, NULL);
}

int lockd_key_status(struct lockd_client *c, const char *key, int permits, int timeout_ms,
                     const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return typed(c, RP_STATUS, key, permits, -1, 0, timeout_ms, reply, NULL);
}

int lockd_send_lock(struct lockd_client *c, const char *key, int hold, int wait_ms, int ttl_ms,
                    int timeout_ms, void *tag)
{
	return typed(c, RP_LOCK, key, hold, wait_ms, ttl_ms, timeout_ms, NULL, tag);
}

int lockd_send_trylock(struct lockd_client *c, const char *key, int hold, int ttl_ms,
                       int timeout_ms, void *tag)
{
	return typed(c, RP_TRYLOCK, key, hold, -1, ttl_ms, timeout_ms, NULL, tag);
}

int lockd_send_unlock(struct lockd_client *c, const char *key, int timeout_ms, void *tag)
{
	return typed(c, RP_UNLOCK, key, 0, -1, 0, timeout_ms, NULL, tag);
}

int lockd_send_extend(struct lockd_client *c, const char *key, int ttl_ms, int timeout_ms,
                      void *tag)
{
	return typed(c, RP_EXTEND, key, 0, -1, ttl_ms, timeout_ms, NULL, tag);
}

int lockd_send_key_status(struct lockd_client *c, const char *key, int permits, int timeout_ms,
                          void *tag)
{
	return typed(c, RP_STATUS, key, permits, -1, 0, timeout_ms, NULL, tag);
}

/* ------------------------------------------------------------ elections */

/* As typed(), for the election requests (reply.c checks name and value). */
static int etyped(struct lockd_client *c, enum rp_ecmd cmd, const char *name, const char *value,
                  int wait_ms, int timeout_ms, const struct lockd_reply **reply, void *tag)
{
	char sb[512];
	char *req = sb;
	if (!c)
		return LOCKD_EARG;
	long n = rp_format_elect(sb, sizeof(sb), cmd, name, LOCKD_MAX_KEY, value, LOCKD_MAX_VALUE,
	                         wait_ms);
	if (n < 0)
		return (int)n;
	if ((size_t)n >= sizeof(sb)) {
		req = malloc((size_t)n + 1);
		if (!req)
			return LOCKD_ENOMEM;
		rp_format_elect(req, (size_t)n + 1, cmd, name, LOCKD_MAX_KEY, value,
		                LOCKD_MAX_VALUE, wait_ms);
	}
	int rc = reply ? lockd_call(c, req, timeout_ms, reply)
	               : cli_enqueue(c, req, (size_t)n, timeout_ms, tag, W_USER);
	if (req != sb)
		free(req);
	return rc;
}

int lockd_check_value(const char *value)
{
	return rp_check_value(value, LOCKD_MAX_VALUE);
}

int lockd_campaign(struct lockd_client *c, const char *name, const char *value, int wait_ms,
                   int timeout_ms, const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return etyped(c, RP_CAMPAIGN, name, value, wait_ms, timeout_ms, reply, NULL);
}

int lockd_proclaim(struct lockd_client *c, const char *name, const char *value, int timeout_ms,
                   const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return etyped(c, RP_PROCLAIM, name, value, -1, timeout_ms, reply, NULL);
}

int lockd_resign(struct lockd_client *c, const char *name, int timeout_ms,
                 const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return etyped(c, RP_RESIGN, name, NULL, -1, timeout_ms, reply, NULL);
}

int lockd_leader(struct lockd_client *c, const char *name, int timeout_ms,
                 const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return etyped(c, RP_LEADER, name, NULL, -1, timeout_ms, reply, NULL);
}

int lockd_observe(struct lockd_client *c, const char *name, int timeout_ms,
                  const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return etyped(c, RP_OBSERVE, name, NULL, -1, timeout_ms, reply, NULL);
}

int lockd_unobserve(struct lockd_client *c, const char *name, int timeout_ms,
                    const struct lockd_reply **reply)
{
	if (!reply)
		return LOCKD_EARG;
	return etyped(c, RP_UNOBSERVE, name, NULL, -1, timeout_ms, reply, NULL);
}

int lockd_send_campaign(struct lockd_client *c, const char *name, const char *value, int wait_ms,
                        int timeout_ms, void *tag)
{
	return etyped(c, RP_CAMPAIGN, name, value, wait_ms, timeout_ms, NULL, tag);
}

int lockd_send_proclaim(struct lockd_client *c, const char *name, const char *value, int timeout_ms,
                        void *tag)
{
	return etyped(c, RP_PROCLAIM, name, value, -1, timeout_ms, NULL, tag);
}

int lockd_send_resign(struct lockd_client *c, const char *name, int timeout_ms, void *tag)
{
	return etyped(c, RP_RESIGN, name, NULL, -1, timeout_ms, NULL, tag);
}

int lockd_send_leader(struct lockd_client *c, const char *name, int timeout_ms, void *tag)
{
	return etyped(c, RP_LEADER, name, NULL, -1, timeout_ms, NULL, tag);
}

int lockd_send_observe(struct lockd_client *c, const char *name, int timeout_ms, void *tag)
{
	return etyped(c, RP_OBSERVE, name, NULL, -1, timeout_ms, NULL, tag);
}

int lockd_send_unobserve(struct lockd_client *c, const char *name, int timeout_ms, void *tag)
{
	return etyped(c, RP_UNOBSERVE, name, NULL, -1, timeout_ms, NULL, tag);
}

/* ------------------------------------------------------------ statuses */

static const struct {
	int status;
	const char *name, *text;
} statuses[] = {
    {LOCKD_OK, "LOCKD_OK", "success"},
    {LOCKD_EARG, "LOCKD_EARG", "bad argument"},
    {LOCKD_ENOMEM, "LOCKD_ENOMEM", "out of memory"},
    {LOCKD_ECONNECT, "LOCKD_ECONNECT", "cannot connect to lockd"},
    {LOCKD_ETIMEDOUT, "LOCKD_ETIMEDOUT", "lockd did not answer in time"},
    {LOCKD_ECLOSED, "LOCKD_ECLOSED", "lockd closed the connection"},
    {LOCKD_EIO, "LOCKD_EIO", "input/output error on the connection"},
    {LOCKD_EPROTO, "LOCKD_EPROTO", "lockd broke the protocol"},
    {LOCKD_EAUTH, "LOCKD_EAUTH", "lockd refused the password"},
    {LOCKD_ESTATE, "LOCKD_ESTATE", "not allowed in this state"},
    {LOCKD_ETLS, "LOCKD_ETLS", "TLS failed (certificate, handshake, or no TLS built in)"},
    {LOCKD_EKEY, "LOCKD_EKEY", "a key lockd would refuse (nothing was sent)"},
    {LOCKD_ENOSESSION, "LOCKD_ENOSESSION", "the session could not be made or resumed"},
};

const char *lockd_status_name(int status)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].status == status)
			return statuses[i].name;
	return "LOCKD_E?";
}

const char *lockd_strerror(int status)
{
	for (size_t i = 0; i < sizeof(statuses) / sizeof(statuses[0]); i++)
		if (statuses[i].status == status)
			return statuses[i].text;
	return "unknown status";
}
