/* log: leveled logging to stderr or syslog. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <syslog.h>
#include <time.h>

#include "log.h"

enum log_level log_level_cur = LOG_LVL_INFO;
static int log_syslog;

static const char *const level_names[] = {"error", "warn", "info", "debug"};

void log_init(enum log_level lvl, int use_syslog)
{
	log_level_cur = lvl;
	if (use_syslog && !log_syslog)
		openlog("lockd", LOG_PID | LOG_NDELAY, LOG_DAEMON);
	else if (!use_syslog && log_syslog)
		closelog();
	log_syslog = use_syslog;
}

void log_set_level(enum log_level lvl)
{
	log_level_cur = lvl;
}

int log_level_parse(const char *s, enum log_level *out)
{
	for (unsigned i = 0; i < sizeof(level_names) / sizeof(level_names[0]); i++)
		if (strcasecmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	return -1;
}

const char *log_level_name(enum log_level lvl)
{
	return level_names[lvl];
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	if (lvl > log_level_cur)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (log_syslog) {
		static const int prio[] = {LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG};
		syslog(prio[lvl], "%s", buf);
		return;
	}
	/* journald stamps lines itself; the time helps when run by hand. */
	struct timespec ts;
	struct tm tm;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	fprintf(stderr, "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s %s\n", tm.tm_year + 1900,
	        tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000,
	        level_names[lvl], buf);
}
