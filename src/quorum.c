/* quorum: pure Redlock arithmetic (majority, verdicts, validity, fences). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "quorum.h"

int quorum_majority(int n)
{
	return n / 2 + 1;
}

int quorum_reached(int yes, int majority)
{
	return yes >= majority;
}

enum quorum_state quorum_verdict(int yes, int busy, int waiting, int majority)
{
	if (yes >= majority)
		return Q_WON;
	if (yes + waiting >= majority)
		return Q_PENDING; /* it may still be won */
	if (yes + busy >= majority)
		return Q_BUSY;
	if (yes + busy + waiting >= majority)
		return Q_PENDING; /* more busy answers would make it busy */
	return Q_LOST;
}

int64_t quorum_validity_us(int64_t lease_ms, int64_t elapsed_us, double drift_factor)
{
	int64_t drift_us = (int64_t)((double)lease_ms * 1000.0 * drift_factor) + 2000;
	return lease_ms * 1000 - elapsed_us - drift_us;
}

int64_t quorum_valid_until(int64_t lease_ms, int64_t start_us, int64_t now_us, double drift_factor)
{
	int64_t left = quorum_validity_us(lease_ms, now_us - start_us, drift_factor);
	return left > 0 ? now_us + left : 0;
}

int64_t quorum_fence(const int64_t *counters, int k, int maj, int *writeback)
{
	int64_t max = 0;
	int at_max = 0;

	for (int i = 0; i < k; i++) {
		if (counters[i] > max) {
			max = counters[i];
			at_max = 1;
		} else if (counters[i] == max) {
			at_max++;
		}
	}
	*writeback = at_max < maj;
	return max;
}

uint64_t quorum_agreed(const uint64_t *v, int n, int maj)
{
	for (int i = 0; i < n; i++) {
		if (!v[i])
			continue;
		int k = 0;
		for (int j = 0; j < n; j++)
			k += v[j] == v[i];
		if (k >= maj)
			return v[i];
	}
	return 0;
}

int quorum_read_threshold(int n, int total, int majority)
{
	int t = majority - (total - n);
	return t > 1 ? t : 1;
}

int64_t quorum_kth_largest(int64_t *v, int n, int k)
{
	for (int i = 0; i < k; i++)
		for (int j = i + 1; j < n; j++)
			if (v[j] > v[i]) {
				int64_t t = v[i];
				v[i] = v[j];
				v[j] = t;
			}
	return v[k - 1];
}

struct quorum_status quorum_status(const struct quorum_status_in *in, int majority)
{
	struct quorum_status s = {0};
	int k = 0;

	/* The masters that hold the key's lock, with the lease left there,
	 * to the front of pttl. */
	for (int i = 0; i < in->n; i++) {
		if (in->pttl[i] >= 0)
			in->pttl[k++] = in->pttl[i];
		else if (in->pttl[i] == -1) /* no expiry: not ours, but held */
			in->pttl[k++] = INT32_MAX;
	}
	s.ok = quorum_reached(in->n, majority);
	if (!s.ok)
		return s;
	int t = quorum_read_threshold(in->n, in->total, majority);
	s.held = k >= t;
	/* Held while t of them still have it: the t-th longest lease left. */
	if (s.held)
		s.ttl_ms = quorum_kth_largest(in->pttl, k, t);
	/* Shared holders: those that t of them hold, where every one listed
	 * its holders; else as many as t of them have at least (which
	 * undercounts holders granted on different majorities). And the
	 * lease that t of them keep at least that long. */
	s.holders = in->members ? quorum_common(in->members, in->nmembers, t)
	                        : (int)quorum_kth_largest(in->zcard, in->n, t);
	s.shared_ttl_ms = s.holders > 0 ? quorum_kth_largest(in->zttl, in->n, t) : 0;
	if (s.shared_ttl_ms < 0)
		s.shared_ttl_ms = 0;
	s.permits = in->npermits > 0 && s.held;
	for (uint32_t p = 1; p < in->npermits; p++)
		s.permits += (uint32_t)(in->permit_yes[p - 1] >= t);
	return s;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int quorum_common(const char **v, int n, int t)
{
	int found = 0;
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(*v), str_cmp);
	for (int i = 0, j; i < n; i = j) {
		for (j = i + 1; j < n && strcmp(v[i], v[j]) == 0; j++)
			;
		found += j - i >= t;
	}
	return found;
}

int quorum_leader_unsure(int answered, int total, int maj, int locked, const uint64_t *fences,
                         int n, uint64_t named)
{
	int t = quorum_read_threshold(answered, total, maj);
	if (t >= maj)
		return 0; /* every master answered: a majority of them decides */
	if (!named && locked >= t && !quorum_reached(locked, maj))
		return 1;
	for (int i = 0; i < n; i++) {
		int same = 0;
		if (fences[i] <= named)
			continue;
		for (int j = 0; j < n; j++)
			same += fences[j] == fences[i];
		if (same >= t)
			return 1;
	}
	return 0;
}
