/* reply: the pure part of liblockd (private; lib/reply.c).
 *
 * Line checks for both directions, request lines built from typed
 * arguments, and the classification of what lockd sends: reply kinds,
 * list replies, events. Every function works on the bytes it is given:
 * no I/O, no allocation, no client state. lib/client.c feeds it lines;
 * tests/unit/test_reply.c and tests/fuzz/fuzz_reply.c feed it buffers. */
#ifndef LOCKD_LIB_REPLY_H
#define LOCKD_LIB_REPLY_H

#include <stddef.h>
#include <stdint.h>

#include "lockd/client.h"

/* ---- lines from lockd ---- */

/* The framing of one received line, judged on the bytes before its LF. */
enum rp_frame {
	RP_FRAME_OK,    /* ended by CR, no NUL byte, at most max_line bytes before the CR */
	RP_FRAME_NO_CR, /* empty or not ended by CR: protocol version 1 ends lines with CR LF */
	RP_FRAME_LONG,  /* more than max_line bytes before the CR */
	RP_FRAME_NUL,   /* a NUL byte before the CR */
};

/* p: n bytes up to (not including) the LF. */
enum rp_frame rp_frame(const char *p, size_t n, size_t max_line);

/* 1: the line (without CR LF, NUL-terminated) is an event ("LOST ...",
 * and of protocol 1.3 "ELECTED ..." and "NOLEADER ..."), whatever request
 * is waiting: their first words begin no reply. */
int rp_is_event(const char *line);
/* Split an event: line is the event line, words a writable copy of it
 * (same length); ev's strings point into them. kind from the first word;
 * "ELECTED name fence value" sets value (else ""). */
void rp_event(struct lockd_event *ev, const char *line, char *words, int in_list);

/* 1: more lines of the same reply follow this one. list: the request's
 * reply is a list (HELD, STATS); in_list: earlier lines of it came. A
 * list ends with END; an ERR instead of its first line is the whole
 * reply. */
int rp_more(const char *line, int list, int in_list);

/* Fill the parsed fields of r (kind, has_num, num, num2, code, text) from
 * the reply's first line; list: the request's reply is a list. line,
 * lines, nlines and latency_us are the caller's. text points into line. */
void rp_classify(struct lockd_reply *r, const char *line, int list);

/* ---- lines to lockd ---- */

/* LOCKD_OK, or LOCKD_EARG for a request lockd_send() cannot take: empty,
 * or holding CR, LF or NUL (n bytes, no line ending). */
int rp_check_request(const char *req, size_t n);
/* LOCKD_OK, or LOCKD_EKEY: key is empty, longer than max bytes, or has a
 * byte outside 0x21-0x7e (blanks, CR, LF, controls, non-ASCII). */
int rp_check_key(const char *key, size_t max);
/* 1: the request's reply is a list (its first word is HELD, STATS or
 * WHO (1.4), in any case). */
int rp_is_list_request(const char *req, size_t n);
/* The first word of a request, at most outlen - 1 bytes, for messages. */
void rp_command(const char *req, size_t n, char *out, size_t outlen);

/* The requests with a key. */
enum rp_cmd {
	RP_LOCK,    /* LOCK key [SHARED | PERMITS n] [WAIT ms] [TTL ms] */
	RP_TRYLOCK, /* TRYLOCK key [SHARED | PERMITS n] [TTL ms] */
	RP_UNLOCK,  /* UNLOCK key */
	RP_EXTEND,  /* EXTEND key ms (ttl_ms) */
	RP_STATUS,  /* STATUS key [PERMITS n] (hold: 0 or n) */
};

/* Write the request line (without line ending, NUL-terminated) into out
 * and return its length; when it is >= outlen, out holds nothing useful
 * and a buffer of that length + 1 is needed (as snprintf). Negative:
 * LOCKD_EKEY (rp_check_key with max_key) or LOCKD_EARG (hold, wait_ms or
 * ttl_ms out of range: see lockd_lock() in lockd/client.h). */
long rp_format(char *out, size_t outlen, enum rp_cmd cmd, const char *key, size_t max_key, int hold,
               int wait_ms, int ttl_ms);

/* The election requests (protocol 1.3). */
enum rp_ecmd {
	RP_CAMPAIGN,  /* CAMPAIGN name value [WAIT ms] */
	RP_PROCLAIM,  /* PROCLAIM name value */
	RP_RESIGN,    /* RESIGN name */
	RP_LEADER,    /* LEADER name */
	RP_OBSERVE,   /* OBSERVE name */
	RP_UNOBSERVE, /* UNOBSERVE name */
};

/* LOCKD_OK, or LOCKD_EARG: value is empty, longer than max bytes, or has
 * a byte outside 0x21-0x7e. */
int rp_check_value(const char *value, size_t max);
/* As rp_format, for an election request: LOCKD_EKEY for a bad name,
 * LOCKD_EARG for a bad value (CAMPAIGN, PROCLAIM; ignored by the others)
 * or command. wait_ms: CAMPAIGN only, < 0 no WAIT. */
long rp_format_elect(char *out, size_t outlen, enum rp_ecmd cmd, const char *name, size_t max_key,
                     const char *value, size_t max_value, int wait_ms);

/* ---- messages ---- */

/* A printable, bounded copy of n bytes (at most 80, then "..."), with
 * \xNN for the others, NUL-terminated in out. */
void rp_escape(char *out, size_t outlen, const char *s, size_t n);

#endif
