/* notify: readiness and status for systemd (sd_notify), a no-op without. */
#ifndef LOCKD_NOTIFY_H
#define LOCKD_NOTIFY_H

void notify_ready(void);
void notify_reloading(void);
void notify_stopping(void);
void notify_status(const char *status);

#endif
