/* tls: TLS for client connections; see tls.h. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "cfg.h"
#include "tls.h"

#ifdef HAVE_TLS

#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

int tls_available(void)
{
	return 1;
}

/* "what FILE: reason" from OpenSSL's error queue. */
static struct ssl_ctx_st *ctx_fail(SSL_CTX *ctx, char *err, size_t errlen, const char *what,
                                   const char *file)
{
	char reason[256] = "unknown error";
	unsigned long e = ERR_peek_last_error();
	if (e)
		ERR_error_string_n(e, reason, sizeof(reason));
	ERR_clear_error();
	snprintf(err, errlen, "%s %s: %s", what, file, reason);
	SSL_CTX_free(ctx);
	return NULL;
}

struct ssl_ctx_st *tls_ctx_new(const struct cfg_tls *t, char *err, size_t errlen)
{
	ERR_clear_error();
	SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
	if (!ctx)
		return ctx_fail(NULL, err, errlen, "tls", "context");
	SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
	/* A renegotiation costs the server a handshake for a few bytes. */
#ifdef SSL_OP_NO_RENEGOTIATION
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION);
#endif
	/* Idle sessions keep no TLS buffers. */
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_session_id_context(ctx, (const unsigned char *)"lockd", 5);
	if (SSL_CTX_use_certificate_chain_file(ctx, t->cert) != 1)
		return ctx_fail(ctx, err, errlen, "tls.cert", t->cert);
	if (SSL_CTX_use_PrivateKey_file(ctx, t->key, SSL_FILETYPE_PEM) != 1)
		return ctx_fail(ctx, err, errlen, "tls.key", t->key);
	if (SSL_CTX_check_private_key(ctx) != 1)
		return ctx_fail(ctx, err, errlen, "tls.key", t->key);
	if (t->ca) {
		STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->ca);
		if (!names || SSL_CTX_load_verify_locations(ctx, t->ca, NULL) != 1) {
			if (names)
				sk_X509_NAME_pop_free(names, X509_NAME_free);
			return ctx_fail(ctx, err, errlen, "tls.ca", t->ca);
		}
		SSL_CTX_set_client_CA_list(ctx, names);
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
	}
	return ctx;
}

void tls_ctx_free(struct ssl_ctx_st *ctx)
{
	SSL_CTX_free(ctx);
}

struct bufferevent *tls_bufferevent(struct event_base *base, int fd, struct ssl_ctx_st *ctx)
{
	SSL *ssl = SSL_new(ctx);
	if (!ssl)
		return NULL;
	/* On failure this frees ssl, and leaves fd open. */
	struct bufferevent *bev = bufferevent_openssl_socket_new(
	    base, fd, ssl, BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
	/* A peer that closes without close_notify has just left: EOF. */
	if (bev)
		bufferevent_openssl_set_allow_dirty_shutdown(bev, 1);
	return bev;
}

void tls_close_notify(struct bufferevent *bev)
{
	SSL *ssl = bufferevent_openssl_get_ssl(bev);
	/* Not after a fatal error, nor before the handshake is done. */
	if (ssl && SSL_is_init_finished(ssl) && !(SSL_get_shutdown(ssl) & SSL_SENT_SHUTDOWN))
		SSL_shutdown(ssl);
	ERR_clear_error();
}

const char *tls_error(struct bufferevent *bev, char *buf, size_t len)
{
	/* libevent keeps SSL_get_error's code, then OpenSSL's error queue,
	 * and hands them back last first: the queue's first error, the
	 * cause, is the one before the code. */
	unsigned long e[16];
	int n = 0;
	while (n < 16 && (e[n] = bufferevent_get_openssl_error(bev)))
		n++;
	if (n == 0 || (n == 1 && e[0] == SSL_ERROR_SYSCALL))
		return NULL; /* the connection failed, not TLS: errno says why */
	if (n == 1)
		snprintf(buf, len, "TLS error %lu", e[0]);
	else
		ERR_error_string_n(e[n - 2], buf, len);
	return buf;
}

#else /* !HAVE_TLS */

int tls_available(void)
{
	return 0;
}

struct ssl_ctx_st *tls_ctx_new(const struct cfg_tls *t, char *err, size_t errlen)
{
	snprintf(err, errlen,
	         "tls: lockd was built without TLS (configure found no "
	         "libevent_openssl and OpenSSL)");
	return NULL;
}

void tls_ctx_free(struct ssl_ctx_st *ctx) {}

struct bufferevent *tls_bufferevent(struct event_base *base, int fd, struct ssl_ctx_st *ctx)
{
	return NULL;
}

void tls_close_notify(struct bufferevent *bev) {}

const char *tls_error(struct bufferevent *bev, char *buf, size_t len)
{
	return NULL;
}

#endif
