/* metrics: an optional HTTP endpoint serving /metrics in Prometheus text. */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>

#include "locktab.h"
#include "log.h"
#include "metrics.h"
#include "stats.h"
#include "util.h"

static struct evhttp *http;

static void metrics_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *out = evbuffer_new();
	if (!out) {
		evhttp_send_error(req, HTTP_INTERNAL, NULL);
		return;
	}
	stats_write_prometheus(out, locktab_keys());
	evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
	                  "text/plain; version=0.0.4");
	evhttp_send_reply(req, HTTP_OK, "OK", out);
	evbuffer_free(out);
}

static void other_cb(struct evhttp_request *req, void *arg)
{
	evhttp_send_error(req, HTTP_NOTFOUND, "try /metrics");
}

int metrics_start(struct event_base *base, const char *listen, char *err, size_t errlen)
{
	struct addr a;
	if (!listen[0])
		return 0;
	if (addr_parse(listen, 0, 1, &a)) {
		snprintf(err, errlen, "metrics.listen %s: bad address", listen);
		return -1;
	}
	http = evhttp_new(base);
	if (!http || evhttp_bind_socket(http, a.host, (ev_uint16_t)a.port) != 0) {
		snprintf(err, errlen, "metrics.listen %s: cannot bind", listen);
		metrics_stop();
		return -1;
	}
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
	evhttp_set_cb(http, "/metrics", metrics_cb, NULL);
	evhttp_set_gencb(http, other_cb, NULL);
	log_info("metrics on http://%s/metrics", listen);
	return 0;
}

void metrics_stop(void)
{
	if (http)
		evhttp_free(http);
	http = NULL;
}
