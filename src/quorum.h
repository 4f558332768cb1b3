/* quorum: pure Redlock arithmetic (majority, validity, fences). */
#ifndef LOCKD_QUORUM_H
#define LOCKD_QUORUM_H

#include <stdint.h>

enum quorum_state {
	Q_PENDING, /* not decided: more answers may come */
	Q_WON,     /* a majority said yes */
	Q_LOST,    /* a majority can no longer say yes */
};

/* N/2+1 of n masters. */
int quorum_majority(int n);

/* yes: counting masters that said yes; out: masters that can no longer say
 * yes (answered no, failed, down, or do not count); n: all masters. */
enum quorum_state quorum_decide(int yes, int out, int n);

/* Redlock validity in microseconds: lease - elapsed - (lease*drift + 2 ms).
 * Non-positive means the grant must not be answered OK. */
int64_t quorum_validity_us(int64_t lease_ms, int64_t elapsed_us, double drift_factor);

/* The quorum-register fence rule over the counters that k granting masters
 * returned: the fence is their maximum; *writeback is set when fewer than
 * maj of them already hold it, so it must be stored on more masters before
 * the grant is answered. */
int64_t quorum_fence(const int64_t *counters, int k, int maj, int *writeback);

#endif
