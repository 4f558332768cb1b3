/* notify: readiness and status for systemd (sd_notify), a no-op without. */
#include "config.h"

#include <stdio.h>
#include <time.h>

#include "notify.h"

#ifdef HAVE_SYSTEMD
#include <systemd/sd-daemon.h>

void notify_ready(void)
{
	sd_notify(0, "READY=1");
}

void notify_reloading(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sd_notifyf(0, "RELOADING=1\nMONOTONIC_USEC=%llu",
	           (unsigned long long)ts.tv_sec * 1000000ULL +
	               (unsigned long long)ts.tv_nsec / 1000);
}

void notify_stopping(void)
{
	sd_notify(0, "STOPPING=1");
}

void notify_status(const char *status)
{
	sd_notifyf(0, "STATUS=%s", status);
}
#else
void notify_ready(void) {}
void notify_reloading(void) {}
void notify_stopping(void) {}
void notify_status(const char *status)
{
	(void)status;
}
#endif
