/* log: leveled logging to stderr or syslog. */
#ifndef LOCKD_LOG_H
#define LOCKD_LOG_H

enum log_level {
	LOG_LVL_ERROR, /* the daemon or a request cannot go on */
	LOG_LVL_WARN,  /* something lost: a lock, a master, a bad reload */
	LOG_LVL_INFO,  /* state changes an operator wants to see once */
	LOG_LVL_DEBUG, /* per-request detail */
};

extern enum log_level log_level_cur;

void log_init(enum log_level lvl, int use_syslog);
void log_set_level(enum log_level lvl);
int log_level_parse(const char *s, enum log_level *out);
const char *log_level_name(enum log_level lvl);
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define log_error(...) log_msg(LOG_LVL_ERROR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)                                                                              \
	do {                                                                                       \
		if (log_level_cur >= LOG_LVL_INFO)                                                 \
			log_msg(LOG_LVL_INFO, __VA_ARGS__);                                        \
	} while (0)
#define log_debug(...)                                                                             \
	do {                                                                                       \
		if (log_level_cur >= LOG_LVL_DEBUG)                                                \
			log_msg(LOG_LVL_DEBUG, __VA_ARGS__);                                       \
	} while (0)

#endif
