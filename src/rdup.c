/* rdup: see rdup.h. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "rdup.h"

redisReply *rdup_reply(const redisReply *r)
{
	redisReply *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->type = r->type;
	c->integer = r->integer;
	if (r->str) {
		c->len = r->len;
		if (!(c->str = malloc(r->len + 1))) {
			freeReplyObject(c);
			return NULL;
		}
		memcpy(c->str, r->str, r->len);
		c->str[r->len] = '\0';
	}
	if (r->element && r->elements) {
		if (!(c->element = calloc(r->elements, sizeof(*c->element)))) {
			freeReplyObject(c);
			return NULL;
		}
		c->elements = r->elements;
		for (size_t i = 0; i < r->elements; i++)
			if (r->element[i] && !(c->element[i] = rdup_reply(r->element[i]))) {
				freeReplyObject(c);
				return NULL;
			}
	}
	return c;
}
