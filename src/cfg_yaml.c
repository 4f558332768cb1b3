/* cfg_yaml: reading a YAML text event by event for the configuration
 * loader. libyaml's event parser gives the mark (line, column) of every
 * node, so every message can name FILE:LINE:COLUMN. */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cfg_yaml.h"

void cfgy_open(struct cfgy *y, const char *name, const char *text, size_t len, char *err,
               size_t errlen)
{
	memset(y, 0, sizeof(*y));
	y->name = name;
	y->err = err;
	y->errlen = errlen;
	y->text = text;
	y->len = len;
	yaml_parser_initialize(&y->parser);
	yaml_parser_set_input_string(&y->parser, (const unsigned char *)text, len);
}

void cfgy_close(struct cfgy *y)
{
	yaml_parser_delete(&y->parser);
}

int cfgy_fail(struct cfgy *y, yaml_mark_t m, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (y->failed)
		return -1;
	y->failed = 1;
	n = snprintf(y->err, y->errlen, "%s:%zu:%zu: ", y->name, m.line + 1, m.column + 1);
	if (n < 0 || (size_t)n >= y->errlen)
		return -1;
	va_start(ap, fmt);
	vsnprintf(y->err + n, y->errlen - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

int cfgy_next(struct cfgy *y, yaml_event_t *ev)
{
	if (!yaml_parser_parse(&y->parser, ev)) {
		yaml_mark_t m = y->parser.problem_mark;
		if (y->parser.error == YAML_READER_ERROR) {
			/* The reader reports a byte offset, not a mark. */
			memset(&m, 0, sizeof(m));
			for (size_t i = 0; i < y->parser.problem_offset && i < y->len; i++) {
				if (y->text[i] == '\n') {
					m.line++;
					m.column = 0;
				} else if (((unsigned char)y->text[i] & 0xc0) != 0x80) {
					m.column++;
				}
			}
		}
		return cfgy_fail(y, m, "YAML syntax error: %s%s%s",
		                 y->parser.problem ? y->parser.problem : "invalid document",
		                 y->parser.context ? " " : "",
		                 y->parser.context ? y->parser.context : "");
	}
	return 0;
}

int cfgy_next_in(struct cfgy *y, yaml_event_t *ev, yaml_event_type_t end)
{
	if (cfgy_next(y, ev))
		return -1;
	if (ev->type != end)
		return 1;
	yaml_event_delete(ev);
	return 0;
}

const char *cfgy_type_name(yaml_event_type_t t)
{
	switch (t) {
	case YAML_MAPPING_START_EVENT:
		return "a mapping";
	case YAML_SEQUENCE_START_EVENT:
		return "a list";
	case YAML_SCALAR_EVENT:
		return "a scalar";
	case YAML_ALIAS_EVENT:
		return "an alias";
	default:
		return "nothing";
	}
}

int cfgy_is_null(const yaml_event_t *ev)
{
	if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	const char *v = (const char *)ev->data.scalar.value;
	return ev->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0;
}
