/* stats: process-wide counters for STATS and /metrics. */
#ifndef LOCKD_STATS_H
#define LOCKD_STATS_H

#include <stdint.h>

struct evbuffer;

struct stats {
	int64_t started_us;
	uint64_t clients;       /* connected now */
	uint64_t clients_total; /* accepted since start */
	uint64_t sessions_waiting;
	uint64_t locks_held; /* keys held by sessions of this lockd */
	uint64_t grants;
	uint64_t handoffs;      /* grants passed directly from holder to waiter */
	uint64_t shared_grants; /* of grants, shared holds */
	uint64_t permit_grants; /* of grants, permits */
	uint64_t busy;
	uint64_t timeouts;
	uint64_t lost;
	uint64_t quorum_failures;
	uint64_t unsure_reads; /* election reads a majority answered that could not tell */
	uint64_t releases;
	uint64_t renewals; /* lock renewals that reached a majority */
	uint64_t renewal_failures;
	uint64_t renew_batches; /* renewal round trips (one script per master) */
	uint64_t fence_writebacks;
	uint64_t protocol_errors;
	uint64_t rejected_clients;
	uint64_t rejected_per_ip;    /* refused at limits.max_clients_per_ip */
	uint64_t accept_pauses;      /* accepting paused for lack of file descriptors */
	uint64_t line_timeouts;      /* sessions closed with a line unfinished too long */
	uint64_t idle_timeouts;      /* sessions closed at limits.idle_timeout_ms */
	uint64_t write_timeouts;     /* sessions closed for not reading their replies */
	uint64_t foreign_protocol;   /* sessions closed on an HTTP or RESP first line */
	uint64_t auth_failures;      /* AUTH with a wrong password */
	uint64_t auth_closes;        /* sessions closed at limits.max_auth_failures */
	uint64_t tls_failures;       /* TLS handshakes or connections that failed */
	uint64_t sessions_resumable; /* resumable sessions here now (1.2) */
	uint64_t sessions_detached;  /* of those, without a connection now */
	uint64_t resumes;            /* RESUME answered OK */
	uint64_t adoptions;          /* of those, sessions taken over from another lockd */
	uint64_t sessions_expired;   /* detached sessions whose grace ran out */
	uint64_t rejected_sessions;  /* SESSION or RESUME refused at limits.max_sessions(_per_ip) */
	uint64_t resume_failures;    /* RESUME answered ERR NOSESSION */
	uint64_t resume_closes;      /* connections closed at max_auth_failures failed RESUMEs */
	uint64_t campaigns;          /* CAMPAIGN requests (1.3) */
	uint64_t leaders;            /* sessions here that lead an election now */
	uint64_t observers;          /* observations (OBSERVE) of connections here now */
	uint64_t rejected_observations;  /* OBSERVE refused at limits.max_observations */
	uint64_t elected_events;         /* ELECTED and NOLEADER events sent */
	uint64_t lockall_granted;        /* LOCKALL answered OK (1.4) */
	uint64_t lockall_timeouts;       /* LOCKALL answered TIMEOUT */
	uint64_t delayed_grants_refused; /* requests that found a key in its lock-delay (1.4) */

	uint64_t output_limit_closes; /* sessions closed at limits.max_output_bytes */
};

extern struct stats stats;

/* Latency histograms (microseconds, powers of two) for /metrics. */
enum hist_id { HIST_ACQUIRE, HIST_HANDOFF, HIST_COUNT };
void stats_observe(enum hist_id h, int64_t us);

/* Append "STAT name value\r\n" lines (no END). keys: current table size. */
void stats_write(struct evbuffer *out, uint64_t keys);
/* Prometheus text exposition. */
void stats_write_prometheus(struct evbuffer *out, uint64_t keys);
/* 1 when a majority of the masters count (LOCK can be granted), else 0. */
int stats_quorum_ok(void);
/* Every STATS field name, one per line (per-master ones with <i>). */
void stats_print_fields(void);

#endif
