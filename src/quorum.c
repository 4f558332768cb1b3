/* quorum: pure Redlock arithmetic (majority, validity, fences). */
#include "config.h"

#include "quorum.h"

int quorum_majority(int n) { return n / 2 + 1; }

enum quorum_state quorum_decide(int yes, int out, int n)
{
	int maj = quorum_majority(n);
	if (yes >= maj)
		return Q_WON;
	if (n - out < maj)
		return Q_LOST;
	return Q_PENDING;
}

int64_t quorum_validity_us(int64_t lease_ms, int64_t elapsed_us, double drift_factor)
{
	int64_t drift_us = (int64_t)((double)lease_ms * 1000.0 * drift_factor) + 2000;
	return lease_ms * 1000 - elapsed_us - drift_us;
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
