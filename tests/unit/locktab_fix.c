/* locktab_fix: the fixture of the locktab unit tests (locktab_fix.h). */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "fake_redlock.h"
#include "locktab_fix.h"
#include "proto.h"
#include "units.h"
#include "util.h"

struct event_base *ltf_base;
struct config ltf_cfg;

static struct tclient *of(struct lt_client *c)
{
	return (struct tclient *)c;
}

static void add_out(struct tclient *t, const char *fmt, va_list ap)
{
	ck_assert_int_lt(t->nout, 1024);
	vsnprintf(t->out[t->nout++], sizeof(t->out[0]), fmt, ap);
}

static void t_reply(struct lt_client *c, const char *fmt, va_list ap)
{
	struct tclient *t = of(c);
	ck_assert_msg(t->blocked, "a reply with no request waiting: %s", fmt);
	add_out(t, fmt, ap);
	t->replies++;
	t->blocked = 0;
}

static void t_line(struct lt_client *c, const char *fmt, va_list ap)
{
	add_out(of(c), fmt, ap);
}
static void t_wake(struct lt_client *c)
{
	of(c)->wakes++;
}

static const struct lt_ops ops = {t_reply, t_line, t_wake, NULL, NULL, NULL};

void ltf_setup(void)
{
	cfg_defaults(&ltf_cfg);
	ltf_cfg.lease_ms = 3000;
	ltf_base = event_base_new();
	ck_assert_ptr_nonnull(ltf_base);
	ck_assert_int_eq(locktab_init(ltf_base, &ltf_cfg, &ops), 0);
}

void ltf_teardown(void)
{
	locktab_shutdown();
	event_base_free(ltf_base);
	cfg_free(&ltf_cfg);
	fake_reset();
}

struct tclient *ltf_client(uint64_t id)
{
	struct tclient *t = calloc(1, sizeof(*t));
	ck_assert_ptr_nonnull(t);
	t->lt.id = id;
	t->lt.peer = "test";
	lt_client_init(&t->lt);
	return t;
}

void ltf_leave(struct tclient *t)
{
	lt_client_end(&t->lt);
	free(t);
}

/* Run the loop for ms (deferred work, timers). */
void ltf_run(int ms)
{
	struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
	event_base_loopexit(ltf_base, &tv);
	event_base_dispatch(ltf_base);
}

/* Send one request line, as a session would. */
void ltf_req(struct tclient *t, const char *line)
{
	struct request r;
	const char *msg;
	ck_assert_msg(!t->blocked, "%s: the previous request is not answered", line);
	ck_assert_int_eq(proto_parse(line, strlen(line), 256, 1024, &r, &msg), PE_NONE);
	t->blocked = 1;
	t->lt.req_us = now_us();
	switch (r.cmd) {
	case CMD_LOCK:
	case CMD_TRYLOCK:
	case CMD_CAMPAIGN:
		lt_lock(&t->lt, &r);
		break;
	case CMD_UNLOCK:
		lt_unlock(&t->lt, r.key, r.klen);
		break;
	case CMD_EXTEND:
		lt_extend(&t->lt, r.key, r.klen, r.ttl_ms);
		break;
	case CMD_STATUS:
		lt_status(&t->lt, r.key, r.klen, r.permits);
		break;
	case CMD_HELD:
		lt_held(&t->lt);
		break;
	default:
		ck_abort_msg("not a locktab request: %s", line);
	}
}

const char *ltf_last(const struct tclient *t)
{
	return t->nout ? t->out[t->nout - 1] : "";
}

/* LOCK granted by the fake with fence f (valid 10 s). */
void ltf_grant(struct tclient *t, const char *line, uint64_t f)
{
	ltf_req(t, line);
	struct rl_call *c = fake_oldest(FK_ACQUIRE);
	ck_assert_ptr_nonnull(c);
	fake_acquire_done(c, RL_OK, f, 10000, 0);
	char exp[32];
	snprintf(exp, sizeof(exp), "OK %llu", (unsigned long long)f);
	ltf_want(t, exp);
}
