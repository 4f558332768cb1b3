/* units: the unit test suites, one per module (run by test_main.c). */
#ifndef LOCKD_TESTS_UNITS_H
#define LOCKD_TESTS_UNITS_H

#include <check.h>

Suite *proto_suite(void);          /* test_proto.c */
Suite *util_suite(void);           /* test_proto.c */
Suite *cfg_suite(void);            /* test_cfg.c */
Suite *quorum_suite(void);         /* test_quorum.c */
Suite *ilist_suite(void);          /* test_ilist.c */
Suite *dheap_suite(void);          /* test_dheap.c */
Suite *slab_suite(void);           /* test_slab.c */
Suite *keytab_suite(void);         /* test_keytab.c */
Suite *locktab_suite(void);        /* test_locktab.c, against fake_redlock.c */
Suite *locktab_shared_suite(void); /* test_locktab_shared.c, the same */
Suite *lockall_suite(void);        /* test_lockall.c, against fake_redlock.c */
Suite *client_suite(void);         /* test_client.c: liblockd on a socketpair */
Suite *client_api_suite(void);     /* test_client_api.c: options' size, typed requests */
Suite *reply_suite(void);          /* test_reply.c: liblockd's pure parser (lib/reply.c) */
Suite *master_repl_suite(void);    /* test_master_repl.c: WAIT, ROLE, Sentinel messages */
Suite *client_resume_suite(void);  /* test_client_resume.c: resume, addresses */
Suite *client_tls_suite(void);     /* test_client_tls.c: liblockd over TLS */
Suite *sha1_suite(void);           /* test_sha1.c */
Suite *cluster_suite(void);        /* test_cluster.c: Redis Cluster slots, maps, redirections */
Suite *cluster_errors_suite(void); /* test_cluster_errors.c: broken cluster maps */
Suite *ktag_suite(void);           /* test_ktag.c: a hash tag per slot for cluster key names */
Suite *ckey_suite(void);           /* test_ckey.c: script calls in a cluster entry's form */
Suite *csl_router_suite(void);     /* test_csl_router.c: the cluster router's pure helpers */

#endif
