/* tls: TLS for client connections, through libevent's OpenSSL
 * bufferevents. Without HAVE_TLS (configure found no libevent_openssl or
 * OpenSSL), contexts cannot be made and say why. */
#ifndef LOCKD_TLS_H
#define LOCKD_TLS_H

#include <stddef.h>

struct bufferevent;
struct cfg_tls;
struct event_base;
struct ssl_ctx_st; /* OpenSSL's SSL_CTX */

/* 1 when lockd was built with TLS. */
int tls_available(void);
/* A server context from t's certificate, key and (if set) the CAs whose
 * client certificates it requires. NULL with a message naming the file in
 * err. The context is reference counted: sessions keep the one they were
 * accepted with after tls_ctx_free. */
struct ssl_ctx_st *tls_ctx_new(const struct cfg_tls *t, char *err, size_t errlen);
void tls_ctx_free(struct ssl_ctx_st *ctx);
/* A bufferevent that accepts a TLS connection on fd and closes it when
 * freed; NULL (fd left open) on failure. */
struct bufferevent *tls_bufferevent(struct event_base *base, int fd, struct ssl_ctx_st *ctx);
/* Send close_notify on a connection that ends cleanly (its replies are
 * written), so that the peer can tell the end from a cut. */
void tls_close_notify(struct bufferevent *bev);
/* What went wrong in TLS on a bufferevent, for a log line; NULL when it
 * was no TLS error (the connection failed). */
const char *tls_error(struct bufferevent *bev, char *buf, size_t len);

#endif
