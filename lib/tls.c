/* tls: liblockd's TLS layer (OpenSSL), and the only file that asks
 * whether liblockd was built with it (HAVE_TLS).
 *
 * A client's TLS state (struct ctls) is an SSL over a BIO of our own that
 * uses recv and send(MSG_NOSIGNAL) on the client's fd, so the client's
 * buffers and loops stay the same with SSL_read/SSL_write in place of
 * recv/send (net_send, net_recv). The handshake is a state of connecting
 * (CS_HANDSHAKE); what OpenSSL wants (to read or to write) is what
 * lockd_want() asks for, and bytes it has decrypted and not handed over
 * make lockd_timeout_ms() 0. Built without TLS, ctls_setup() fails with
 * LOCKD_ETLS and no client ever has TLS state. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "client_int.h"

#ifdef HAVE_TLS
#include <arpa/inet.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

struct ctls {
	SSL_CTX *ctx;
	SSL *ssl;
	BIO_METHOD *biom;
	int ww;       /* OpenSSL wants to write before it can go on */
	int has_cert; /* a client certificate was given */
	int bio_eof;  /* recv() returned 0 */
};

static int nbio_write(BIO *b, const char *p, int n)
{
	struct lockd_client *c = BIO_get_data(b);
	ssize_t w;
	BIO_clear_retry_flags(b);
	do
		w = send(c->fd, p, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	while (w < 0 && errno == EINTR);
	if (w < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_write(b);
	return (int)w;
}

static int nbio_read(BIO *b, char *p, int n)
{
	struct lockd_client *c = BIO_get_data(b);
	ssize_t k;
	BIO_clear_retry_flags(b);
	do
		k = recv(c->fd, p, (size_t)n, MSG_DONTWAIT);
	while (k < 0 && errno == EINTR);
	if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
		BIO_set_retry_read(b);
	if (k == 0)
		c->tls->bio_eof = 1;
	return (int)k;
}

static long nbio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
	struct lockd_client *c = BIO_get_data(b);
	(void)num;
	(void)ptr;
	if (cmd == BIO_CTRL_FLUSH)
		return 1;
	if (cmd == BIO_CTRL_EOF)
		return c && c->tls && c->tls->bio_eof;
	return 0;
}

static int nbio_create(BIO *b)
{
	BIO_set_init(b, 1);
	return 1;
}

/* Fail with LOCKD_ETLS: what, then OpenSSL's reason (or the certificate
 * verification's). */
static int tls_fail(struct lockd_client *c, struct ctls *t, const char *what)
{
	char reason[256] = "";
	unsigned long e = ERR_peek_last_error();
	long v = t && t->ssl ? SSL_get_verify_result(t->ssl) : X509_V_OK;
	if (v != X509_V_OK)
		snprintf(reason, sizeof(reason), "lockd's certificate did not verify: %s",
		         X509_verify_cert_error_string(v));
	else if (e)
		snprintf(reason, sizeof(reason), "%s", ERR_reason_error_string(e));
	else
		snprintf(reason, sizeof(reason), "%s", errno ? strerror(errno) : "failed");
	ERR_clear_error();
	const char *hint = "";
	if (!(t && t->has_cert) && strstr(reason, "alert") && strstr(reason, "certificate"))
		hint = " (lockd asks for a client certificate: tls_cert)";
	return cli_fail(c, LOCKD_ETLS, "%s: %s%s", what, reason, hint);
}

static void ctls_release(struct ctls *t)
{
	if (!t)
		return;
	SSL_free(t->ssl);
	SSL_CTX_free(t->ctx);
	BIO_meth_free(t->biom);
	free(t);
}

/* The context: protocol versions, verification, the client certificate. */
static int ctx_setup(struct lockd_client *c, struct ctls *t, const struct lockd_opts *o)
{
	char what[512];
	t->ctx = SSL_CTX_new(TLS_client_method());
	if (!t->ctx)
		return tls_fail(c, t, "TLS: no context");
	SSL_CTX_set_min_proto_version(t->ctx, TLS1_2_VERSION);
	SSL_CTX_set_mode(t->ctx,
	                 SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
#ifdef SSL_OP_IGNORE_UNEXPECTED_EOF
	SSL_CTX_set_options(t->ctx, SSL_OP_IGNORE_UNEXPECTED_EOF);
#endif
	if (!o->tls_no_verify) {
		SSL_CTX_set_verify(t->ctx, SSL_VERIFY_PEER, NULL);
		int ok = o->tls_ca ? SSL_CTX_load_verify_locations(t->ctx, o->tls_ca, NULL)
		                   : SSL_CTX_set_default_verify_paths(t->ctx);
		if (ok != 1) {
			snprintf(what, sizeof(what), "TLS: CA file %s",
			         o->tls_ca ? o->tls_ca : "(the system's)");
			return tls_fail(c, t, what);
		}
	}
	if (o->tls_cert) {
		const char *key = o->tls_key ? o->tls_key : o->tls_cert;
		if (SSL_CTX_use_certificate_chain_file(t->ctx, o->tls_cert) != 1) {
			snprintf(what, sizeof(what), "TLS: certificate %s", o->tls_cert);
			return tls_fail(c, t, what);
		}
		if (SSL_CTX_use_PrivateKey_file(t->ctx, key, SSL_FILETYPE_PEM) != 1 ||
		    SSL_CTX_check_private_key(t->ctx) != 1) {
			snprintf(what, sizeof(what), "TLS: key %s", key);
			return tls_fail(c, t, what);
		}
		t->has_cert = 1;
	}
	return 0;
}

/* The SSL of the connection, over our BIO, and the name to verify. */
static int ssl_setup(struct lockd_client *c, struct ctls *t, const struct lockd_opts *o,
                     const char *name)
{
	char what[512];
	t->ssl = SSL_new(t->ctx);
	t->biom = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "lockd socket");
	BIO *b = NULL;
	if (t->ssl && t->biom && BIO_meth_set_write(t->biom, nbio_write) == 1 &&
	    BIO_meth_set_read(t->biom, nbio_read) == 1 &&
	    BIO_meth_set_ctrl(t->biom, nbio_ctrl) == 1 &&
	    BIO_meth_set_create(t->biom, nbio_create) == 1)
		b = BIO_new(t->biom);
	if (!b) {
		SSL_free(t->ssl);
		t->ssl = NULL;
		return tls_fail(c, t, "TLS: no memory for the connection");
	}
	BIO_set_data(b, c);
	SSL_set_bio(t->ssl, b, b);
	if (name && *name) {
		unsigned char ip[16];
		int is_ip = inet_pton(AF_INET, name, ip) == 1 || inet_pton(AF_INET6, name, ip) == 1;
		if (!is_ip)
			SSL_set_tlsext_host_name(t->ssl, name);
		if (!o->tls_no_verify &&
		    (is_ip ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(t->ssl), name)
		           : SSL_set1_host(t->ssl, name)) != 1) {
			snprintf(what, sizeof(what), "TLS: server name \"%s\"", name);
			return tls_fail(c, t, what);
		}
	}
	SSL_set_connect_state(t->ssl);
	return 0;
}

int ctls_setup(struct lockd_client *c, const struct lockd_opts *o, const char *name)
{
	ERR_clear_error();
	if (o->tls_key && !o->tls_cert)
		return cli_fail(c, LOCKD_EARG,
		                "TLS: a key (tls_key) without a certificate (tls_cert)");
	struct ctls *t = calloc(1, sizeof(*t));
	if (!t)
		return cli_fail(c, LOCKD_ENOMEM, "out of memory");
	int rc = ctx_setup(c, t, o);
	if (rc == 0)
		rc = ssl_setup(c, t, o, name);
	if (rc != 0) {
		ctls_release(t);
		return rc;
	}
	c->tls = t;
	return 0;
}

int ctls_handshake(struct lockd_client *c)
{
	struct ctls *t = c->tls;
	ERR_clear_error();
	errno = 0;
	int r = SSL_do_handshake(t->ssl);
	if (r == 1) {
		t->ww = 0;
		c->st = CS_OPEN;
		return 0;
	}
	int e = SSL_get_error(t->ssl, r);
	t->ww = e == SSL_ERROR_WANT_WRITE;
	if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
		return 0;
	char what[400];
	snprintf(what, sizeof(what), "TLS handshake with %s", c->peer);
	if (e == SSL_ERROR_SYSCALL && (errno == 0 || errno == ECONNRESET || errno == EPIPE) &&
	    ERR_peek_last_error() == 0) {
		errno = 0;
		return cli_fail(c, LOCKD_ETLS,
		                "%s: lockd closed the connection (not a TLS listener?)", what);
	}
	return tls_fail(c, t, what);
}

ssize_t ctls_io(struct lockd_client *c, char *p, size_t n, int writing)
{
	struct ctls *t = c->tls;
	int len = n > 0x40000000 ? 0x40000000 : (int)n;
	ERR_clear_error();
	errno = 0;
	int r = writing ? SSL_write(t->ssl, p, len) : SSL_read(t->ssl, p, len);
	if (r > 0) {
		t->ww = 0;
		return r;
	}
	int e = SSL_get_error(t->ssl, r);
	t->ww = e == SSL_ERROR_WANT_WRITE;
	switch (e) {
	case SSL_ERROR_WANT_READ:
	case SSL_ERROR_WANT_WRITE:
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN:
		if (writing) {
			errno = EPIPE;
			return -1;
		}
		return 0;
	case SSL_ERROR_SYSCALL:
		if (ERR_peek_last_error() == 0) {
			if (errno == 0 && !writing)
				return 0; /* EOF */
			if (errno == 0)
				errno = EPIPE;
			return -1;
		}
		/* fall through */
	default: {
		char what[400];
		snprintf(what, sizeof(what), "TLS with %s", c->peer);
		tls_fail(c, t, what);
		errno = EPROTO;
		return -1;
	}
	}
}

int ctls_wants_write(const struct lockd_client *c)
{
	return c->tls && c->tls->ww;
}

int ctls_pending(const struct lockd_client *c)
{
	return c->tls && SSL_has_pending(c->tls->ssl);
}

void ctls_free(struct lockd_client *c)
{
	struct ctls *t = c->tls;
	if (!t)
		return;
	ERR_clear_error();
	if (c->fd >= 0 && c->st == CS_OPEN && SSL_is_init_finished(t->ssl))
		SSL_shutdown(t->ssl); /* close_notify, as far as the socket takes it */
	ctls_release(t);
	ERR_clear_error();
	c->tls = NULL;
}

int lockd_tls_available(void)
{
	return 1;
}

#else /* !HAVE_TLS */

int ctls_setup(struct lockd_client *c, const struct lockd_opts *o, const char *name)
{
	(void)o;
	(void)name;
	return cli_fail(c, LOCKD_ETLS, "TLS to %s: liblockd was built without TLS", c->peer);
}

/* Without TLS no client has c->tls, so nothing calls these two. */
int ctls_handshake(struct lockd_client *c)
{
	return cli_fail(c, LOCKD_ETLS, "TLS: liblockd was built without TLS");
}

ssize_t ctls_io(struct lockd_client *c, char *p, size_t n, int writing)
{
	(void)p;
	(void)n;
	(void)writing;
	cli_fail(c, LOCKD_ETLS, "TLS: liblockd was built without TLS");
	errno = EPROTO;
	return -1;
}

int ctls_wants_write(const struct lockd_client *c)
{
	(void)c;
	return 0;
}

int ctls_pending(const struct lockd_client *c)
{
	(void)c;
	return 0;
}

void ctls_free(struct lockd_client *c)
{
	(void)c;
}

int lockd_tls_available(void)
{
	return 0;
}

#endif
