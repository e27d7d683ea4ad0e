/*
 * http.c -- the metaserver's HTTP endpoint for operators (--metrics
 * URL): GET /metrics, the Prometheus text of metrics.c, and GET /health,
 * a one-line JSON status (200 while serving, 503 while shutting down).
 * nng's own HTTP server, so no new dependency; this is the one file that
 * includes its header. It runs on nng's threads, apart from the workers:
 * a scrape costs the request path nothing but the read lock its pool
 * figures take.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <nng/nng.h>
#include <nng/supplemental/http/http.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"

struct ms_http {
	nng_http_server *srv;
	nng_url *url;
};

/* One GET: text from make (ms_metrics_text or ms_health_text), 200, or
 * 503 when make says the server does not serve. */
static void
reply(nng_aio *aio, int (*make)(struct ms *, struct pbuf *),
    const char *type)
{
	nng_http_handler *hd = nng_aio_get_input(aio, 1);
	struct ms *ms = nng_http_handler_get_data(hd);
	nng_http_res *res = NULL;
	struct pbuf b;
	int rc, st;

	pbuf_init(&b);
	st = make(ms, &b);
	if (b.err != 0 || (rc = nng_http_res_alloc(&res)) != 0 ||
	    (rc = nng_http_res_set_status(res, st == 0 ? 200 : 503)) != 0 ||
	    (rc = nng_http_res_set_header(res, "Content-Type", type)) != 0 ||
	    (rc = nng_http_res_copy_data(res, b.data, b.len)) != 0) {
		pbuf_fini(&b);
		if (res != NULL) {
			nng_http_res_free(res);
		}
		nng_aio_finish(aio, NNG_ENOMEM);
		return;
	}
	pbuf_fini(&b);
	nng_aio_set_output(aio, 0, res);
	nng_aio_finish(aio, 0);
}

static void
metrics_cb(nng_aio *aio)
{
	reply(aio, ms_metrics_text, "text/plain; version=0.0.4");
}

static void
health_cb(nng_aio *aio)
{
	reply(aio, ms_health_text, "application/json");
}

static int
add(struct ms_http *h, struct ms *ms, const char *path, void (*cb)(nng_aio *))
{
	nng_http_handler *hd;
	int rc = nng_http_handler_alloc(&hd, path, cb);

	if (rc != 0) {
		return rc;
	}
	/* a GET has no body: none is read (nng would take up to 1 MiB) */
	if ((rc = nng_http_handler_collect_body(hd, false, 0)) != 0 ||
	    (rc = nng_http_handler_set_data(hd, ms, NULL)) != 0 ||
	    (rc = nng_http_server_add_handler(h->srv, hd)) != 0) {
		nng_http_handler_free(hd);
	}
	return rc;
}

/* ms_http_start -- see ms_int.h */
int
ms_http_start(struct ms *ms, const char *url, struct ms_http **out)
{
	struct ms_http *h = calloc(1, sizeof(*h));
	int rc;

	*out = NULL;
	if (h == NULL) {
		return cxlp_fail(-ENOMEM, "metrics: no memory");
	}
	if ((rc = nng_url_parse(&h->url, url)) != 0 ||
	    strcmp(h->url->u_scheme, "http") != 0) {
		if (h->url != NULL) {
			nng_url_free(h->url);
		}
		free(h);
		return cxlp_fail(-EINVAL, "--metrics %s: not an http://host:port "
		    "URL%s%s", url, rc != 0 ? ": " : "",
		    rc != 0 ? nng_strerror(rc) : "");
	}
	if ((rc = nng_http_server_hold(&h->srv, h->url)) != 0 ||
	    (rc = add(h, ms, "/metrics", metrics_cb)) != 0 ||
	    (rc = add(h, ms, "/health", health_cb)) != 0 ||
	    (rc = nng_http_server_start(h->srv)) != 0) {
		ms_http_stop(&h);
		return cxlp_fail(rc == NNG_EADDRINUSE ? -EADDRINUSE : -EIO,
		    "--metrics %s: cannot serve: %s", url, nng_strerror(rc));
	}
	log_info("op=metrics listen=%s", url);
	*out = h;
	return 0;
}

/* ms_http_stop -- see ms_int.h */
void
ms_http_stop(struct ms_http **hp)
{
	struct ms_http *h = hp == NULL ? NULL : *hp;

	if (h == NULL) {
		return;
	}
	if (h->srv != NULL) {
		nng_http_server_stop(h->srv);
		nng_http_server_release(h->srv);
	}
	if (h->url != NULL) {
		nng_url_free(h->url);
	}
	free(h);
	*hp = NULL;
}
