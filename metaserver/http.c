/*
 * http.c -- the metaserver's HTTP endpoint for operators (--metrics
 * URL): GET /metrics, the Prometheus text of metrics.c, and GET /health,
 * a one-line JSON status (200 while serving, 503 while shutting down).
 *
 * Why its own small server rather than nng's: nng 1.5.2's HTTP server
 * keeps every connection a client opens, idle or not, for as long as the
 * client likes, so a few hundred idle connections use up the process's
 * file descriptors, and then no handler can connect to the metaserver at
 * all. This one thread serves at most HTTP_CONNS_MAX connections at
 * once (past that, new ones wait in the kernel's backlog, holding no
 * descriptor of ours), gives each HTTP_IDLE_MS to send its request, reads
 * at most HTTP_REQ_MAX bytes of it (headers only: a GET has no body),
 * answers, and closes. A scrape costs the request path nothing but the
 * read lock its pool figures take. An answer is sent whole: a client
 * that reads it slowly holds the thread for up to HTTP_SEND_MS, then is
 * dropped. Out of descriptors, the thread stops accepting for
 * HTTP_ACCEPT_PAUSE_MS at a time rather than spin on a listener that
 * stays readable.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "log.h"
#include "ms_int.h"

#define HTTP_CONNS_MAX 16
#define HTTP_IDLE_MS 2000
#define HTTP_REQ_MAX 8192
#define HTTP_SEND_MS 2000
#define HTTP_ACCEPT_PAUSE_MS 200

struct conn {
	int fd;            /* -1: free */
	uint64_t until_ms; /* when an idle one is dropped */
	size_t len;
	char req[HTTP_REQ_MAX];
};

struct ms_http {
	struct ms *ms;
	int lfd;        /* listening socket */
	int wake[2];    /* a pipe: a byte stops the thread */
	uint64_t accept_after_ms; /* accept failed for want of descriptors */
	pthread_t thread;
	struct conn c[HTTP_CONNS_MAX];
};

/* Parse http://host:port into a listening socket. */
static int
listen_on(const char *url, int *out)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
	    .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *ai = NULL;
	char host[256], port[16];
	const char *h = url + 7, *colon = strrchr(h, ':');
	int fd = -1, one = 1, rc;

	if (strncmp(url, "http://", 7) != 0 || colon == NULL ||
	    (size_t)(colon - h) >= sizeof(host) || strlen(colon + 1) == 0 ||
	    strlen(colon + 1) >= sizeof(port) || strchr(colon, '/') != NULL) {
		return cxlp_fail(-EINVAL, "--metrics %s: not an "
		    "http://host:port URL", url);
	}
	snprintf(host, sizeof(host), "%.*s", (int)(colon - h), h);
	snprintf(port, sizeof(port), "%s", colon + 1);
	if (host[0] == '[' && host[strlen(host) - 1] == ']') {
		memmove(host, host + 1, strlen(host) - 2);
		host[strlen(host) - 2] = '\0';
	}
	if ((rc = getaddrinfo(host[0] ? host : NULL, port, &hints, &ai)) != 0) {
		return cxlp_fail(-EINVAL, "--metrics %s: %s", url,
		    gai_strerror(rc));
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one,
	    sizeof(one)) != 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 ||
	    listen(fd, 64) != 0) {
		int e = errno;

		if (fd >= 0) {
			close(fd);
		}
		freeaddrinfo(ai);
		return cxlp_fail(-e, "--metrics %s: cannot serve: %s", url,
		    strerror(e));
	}
	freeaddrinfo(ai);
	*out = fd;
	return 0;
}

/* Send all n bytes on the non-blocking fd, waiting for room until
 * until_ms; false if the client went or did not read in time, or the
 * endpoint is stopping (wake readable: the byte is left for the loop). */
static bool
send_all(const struct ms_http *h, int fd, const void *p, size_t n,
    uint64_t until_ms)
{
	const char *b = p;

	while (n > 0) {
		ssize_t w = send(fd, b, n, MSG_NOSIGNAL);
		struct pollfd room[2] = { { .fd = fd, .events = POLLOUT },
			{ .fd = h->wake[0], .events = POLLIN } };
		uint64_t now;

		if (w > 0) {
			b += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR) {
			continue;
		}
		if (w == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) ||
		    (now = cxlp_now_ms()) >= until_ms) {
			return false; /* the client went: nothing to keep */
		}
		if (poll(room, 2, (int)(until_ms - now)) > 0 &&
		    room[1].revents != 0) {
			return false; /* stopping */
		}
	}
	return true;
}

/* Answer the request in c (complete headers), then the caller closes. */
static void
respond(struct ms_http *h, struct conn *c)
{
	bool get = strncmp(c->req, "GET ", 4) == 0;
	bool head_only = strncmp(c->req, "HEAD ", 5) == 0;
	const char *path = c->req + (head_only ? 5 : 4);
	const char *type = "text/plain; charset=utf-8";
	int status = 404, st;
	uint64_t until;
	struct pbuf b;
	char head[256];

	pbuf_init(&b);
	if (!get && !head_only) {
		status = 405;
		pbuf_put_bytes(&b, "only GET and HEAD\n", 18);
	} else if (strncmp(path, "/metrics ", 9) == 0 ||
	    strncmp(path, "/metrics?", 9) == 0) {
		st = ms_metrics_text(h->ms, &b);
		status = st == 0 ? 200 : 500;
		type = "text/plain; version=0.0.4";
	} else if (strncmp(path, "/health ", 8) == 0) {
		status = ms_health_text(h->ms, &b) == 0 ? 200 : 503;
		type = "application/json";
	} else {
		pbuf_put_bytes(&b, "not found\n", 10);
	}
	snprintf(head, sizeof(head), "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n"
	    "Content-Length: %zu\r\n%sConnection: close\r\n\r\n", status,
	    status == 200 ? "OK" : status == 503 ? "Service Unavailable" :
	    status == 405 ? "Method Not Allowed" : status == 500 ?
	    "Internal Server Error" : "Not Found", type, b.err ? 0 : b.len,
	    status == 405 ? "Allow: GET, HEAD\r\n" : "");
	until = cxlp_now_ms() + HTTP_SEND_MS;
	if (send_all(h, c->fd, head, strlen(head), until) && b.err == 0 &&
	    !head_only) {
		(void)send_all(h, c->fd, b.data, b.len, until);
	}
	pbuf_fini(&b);
}

static void
conn_close(struct conn *c)
{
	close(c->fd);
	c->fd = -1;
	c->len = 0;
}

/* Read what c's client sent; answer once its headers are complete. */
static void
conn_read(struct ms_http *h, struct conn *c)
{
	ssize_t r = recv(c->fd, c->req + c->len, sizeof(c->req) - 1 - c->len,
	    0);

	if (r <= 0) {
		conn_close(c);
		return;
	}
	c->len += (size_t)r;
	c->req[c->len] = '\0';
	if (strstr(c->req, "\r\n\r\n") != NULL ||
	    strstr(c->req, "\n\n") != NULL) {
		respond(h, c);
		conn_close(c);
	} else if (c->len == sizeof(c->req) - 1) {
		static const char big[] = "HTTP/1.1 431 Request Header "
		    "Fields Too Large\r\nConnection: close\r\n"
		    "Content-Length: 0\r\n\r\n";

		(void)send_all(h, c->fd, big, sizeof(big) - 1,
		    cxlp_now_ms() + HTTP_SEND_MS);
		conn_close(c);
	}
}

static void
accept_one(struct ms_http *h)
{
	int fd = accept4(h->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

	if (fd < 0) {
		if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS ||
		    errno == ENOMEM) {
			/* the connection stays in the backlog, the listener
			 * readable: do not spin on it */
			h->accept_after_ms = cxlp_now_ms() +
			    HTTP_ACCEPT_PAUSE_MS;
		}
		return; /* EAGAIN, or the peer already went */
	}
	for (int i = 0; i < HTTP_CONNS_MAX; i++) {
		if (h->c[i].fd < 0) {
			h->c[i].fd = fd;
			h->c[i].len = 0;
			h->c[i].until_ms = cxlp_now_ms() + HTTP_IDLE_MS;
			return;
		}
	}
	close(fd); /* cannot happen: the listener is polled only when a
	            * place is free */
}

static void *
http_main(void *arg)
{
	struct ms_http *h = arg;

	for (;;) {
		struct pollfd pfd[HTTP_CONNS_MAX + 2];
		int map[HTTP_CONNS_MAX + 2], n = 0, used = 0;
		uint64_t now = cxlp_now_ms();
		int timeout = HTTP_IDLE_MS;

		pfd[n++] = (struct pollfd){ .fd = h->wake[0], .events = POLLIN };
		for (int i = 0; i < HTTP_CONNS_MAX; i++) {
			struct conn *c = &h->c[i];

			if (c->fd < 0) {
				continue;
			}
			if (now >= c->until_ms) {
				conn_close(c); /* idle too long */
				continue;
			}
			used++;
			if ((int)(c->until_ms - now) < timeout) {
				timeout = (int)(c->until_ms - now);
			}
			map[n] = i;
			pfd[n++] = (struct pollfd){ .fd = c->fd, .events = POLLIN };
		}
		if (used < HTTP_CONNS_MAX && now >= h->accept_after_ms) {
			map[n] = -1; /* else the backlog holds them */
			pfd[n++] = (struct pollfd){ .fd = h->lfd, .events = POLLIN };
		} else if (now < h->accept_after_ms &&
		    (int)(h->accept_after_ms - now) < timeout) {
			timeout = (int)(h->accept_after_ms - now);
		}
		if (poll(pfd, (nfds_t)n, timeout) < 0) {
			if (errno != EINTR) {
				usleep(100 * 1000); /* not seen: no spin */
			}
			continue;
		}
		if (pfd[0].revents != 0) {
			break;
		}
		for (int k = 1; k < n; k++) {
			if (pfd[k].revents == 0) {
				continue;
			}
			if (map[k] < 0) {
				accept_one(h);
			} else {
				conn_read(h, &h->c[map[k]]);
			}
		}
	}
	return NULL;
}

/* Log the address the endpoint really listens on (a host name may have
 * several; the first getaddrinfo gave is the one bound). */
static void
log_bound(int fd, const char *url)
{
	struct sockaddr_storage sa;
	socklen_t len = sizeof(sa);
	char host[NI_MAXHOST], port[NI_MAXSERV];

	if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 ||
	    getnameinfo((struct sockaddr *)&sa, len, host, sizeof(host), port,
	    sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV) != 0) {
		log_info("op=metrics listen=%s", url);
		return;
	}
	log_info("op=metrics listen=%s bound=%s%s%s:%s", url,
	    sa.ss_family == AF_INET6 ? "[" : "", host,
	    sa.ss_family == AF_INET6 ? "]" : "", port);
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
	h->ms = ms;
	for (int i = 0; i < HTTP_CONNS_MAX; i++) {
		h->c[i].fd = -1;
	}
	if ((rc = listen_on(url, &h->lfd)) != 0) {
		free(h);
		return rc;
	}
	if (pipe2(h->wake, O_CLOEXEC) != 0) {
		rc = cxlp_fail(-errno, "--metrics: pipe: %s", strerror(errno));
		close(h->lfd);
		free(h);
		return rc;
	}
	if (pthread_create(&h->thread, NULL, http_main, h) != 0) {
		rc = cxlp_fail(-EAGAIN, "--metrics: cannot start its thread");
		close(h->wake[0]);
		close(h->wake[1]);
		close(h->lfd);
		free(h);
		return rc;
	}
	log_bound(h->lfd, url);
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
	while (write(h->wake[1], "x", 1) != 1 && errno == EINTR) {
	}
	pthread_join(h->thread, NULL); /* one byte into an empty pipe */
	for (int i = 0; i < HTTP_CONNS_MAX; i++) {
		if (h->c[i].fd >= 0) {
			close(h->c[i].fd);
		}
	}
	close(h->lfd);
	close(h->wake[0]);
	close(h->wake[1]);
	free(h);
	*hp = NULL;
}
