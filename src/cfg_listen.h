/* cfg_listen: the mapping form of a listen entry, {address: "HOST:PORT",
 * tls: {cert: FILE, key: FILE, ca: FILE}}, and the type it fills (struct
 * config holds one per listen entry). Below cfg.c, on cfg_yaml. */
#ifndef LOCKD_CFG_LISTEN_H
#define LOCKD_CFG_LISTEN_H

/* The TLS files of a listen entry; all NULL for plain TCP. */
struct cfg_tls {
	char *cert; /* PEM certificate chain */
	char *key;  /* PEM private key */
	char *ca;   /* PEM CA certificates; set: clients need a certificate */
};

struct cfgy;
struct yaml_mark_s; /* yaml_mark_t: the users of cfg.h need no yaml.h */

/* A listen entry written as a mapping (its start consumed, its mark in
 * *m). Fills t; returns the address (malloc'd, its mark in *m), or NULL
 * (failed). */
char *cfg_listen_entry(struct cfgy *y, struct cfg_tls *t, struct yaml_mark_s *m);
/* Free what t holds and zero it. */
void cfg_tls_free(struct cfg_tls *t);

#endif
