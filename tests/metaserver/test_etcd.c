/*
 * test_etcd.c -- tests of metaserver/etcd.c's transport against a fake
 * gateway on loopback that answers each connection with canned bytes:
 * a huge chunked body, garbage, silence, an HTTP error without etcd's
 * body, and the failover from a dead endpoint to a live one.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "err.h"
#include "etcd.h"

TestSuite(etcd, .timeout = 60);

enum fake_mode { FAKE_OK, FAKE_HUGE, FAKE_GARBAGE, FAKE_SILENT,
	FAKE_HTTP500, FAKE_UNAVAILABLE };

struct fake {
	int fd;
	int port;
	enum fake_mode mode;
	pthread_t thread;
	int stop; /* atomic: fake_stop ends a silence early */
};

static const char ok_body[] = "{\"header\":{\"revision\":\"7\"},"
    "\"kvs\":[{\"key\":\"eA==\",\"create_revision\":\"3\","
    "\"mod_revision\":\"4\",\"version\":\"2\",\"value\":\"bWU=\"}],"
    "\"count\":\"1\"}";

static const char garbage[] =
    "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{\"header";
static const char http500[] =
    "HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\n{}";

static void
send_all(int c, const char *s, size_t n)
{
	while (n > 0) {
		ssize_t w = send(c, s, n, MSG_NOSIGNAL);

		if (w <= 0) {
			return;
		}
		s += w;
		n -= (size_t)w;
	}
}

static void
answer(struct fake *f, int c)
{
	char buf[8192], hdr[256];
	static char chunk[65536];

	(void)recv(c, buf, sizeof(buf), 0); /* the whole small request */
	switch (f->mode) {
	case FAKE_OK:
	case FAKE_UNAVAILABLE: {
		const char *b = f->mode == FAKE_OK ? ok_body :
		    "{\"error\":\"no leader\",\"message\":\"etcdserver: no "
		    "leader\",\"code\":14}";
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 %s\r\nContent-Type: "
		    "application/json\r\nContent-Length: %zu\r\n\r\n",
		    f->mode == FAKE_OK ? "200 OK" : "503 Unavailable",
		    strlen(b));
		send_all(c, hdr, strlen(hdr));
		send_all(c, b, strlen(b));
		break;
	}
	case FAKE_HUGE:
		snprintf(hdr, sizeof(hdr), "HTTP/1.1 200 OK\r\n"
		    "Transfer-Encoding: chunked\r\n\r\n");
		send_all(c, hdr, strlen(hdr));
		memset(chunk, '[', sizeof(chunk));
		for (int i = 0; i < 64; i++) { /* 4 MiB, more than allowed */
			send_all(c, "10000\r\n", 7);
			send_all(c, chunk, sizeof(chunk));
			send_all(c, "\r\n", 2);
		}
		break;
	case FAKE_GARBAGE: /* says 9 bytes, sends 8 of them, hangs up */
		send_all(c, garbage, sizeof(garbage) - 1);
		break;
	case FAKE_SILENT: /* 3 s, or until fake_stop */
		for (int i = 0; i < 60 && !__atomic_load_n(&f->stop,
		    __ATOMIC_ACQUIRE); i++) {
			cxlp_sleep_ms(50);
		}
		break;
	case FAKE_HTTP500:
		send_all(c, http500, sizeof(http500) - 1);
		break;
	}
}

static void *
fake_main(void *arg)
{
	struct fake *f = arg;
	int c;

	while ((c = accept(f->fd, NULL, NULL)) >= 0) {
		answer(f, c);
		close(c);
	}
	return NULL;
}

static void
fake_start(struct fake *f, enum fake_mode mode)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	socklen_t len = sizeof(a);

	f->mode = mode;
	f->stop = 0;
	f->fd = socket(AF_INET, SOCK_STREAM, 0);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	cr_assert(bind(f->fd, (struct sockaddr *)&a, sizeof(a)) == 0);
	cr_assert(listen(f->fd, 8) == 0);
	cr_assert(getsockname(f->fd, (struct sockaddr *)&a, &len) == 0);
	f->port = ntohs(a.sin_port);
	cr_assert(pthread_create(&f->thread, NULL, fake_main, f) == 0);
}

/* end f's thread before f goes out of scope: a listening socket shut
 * down makes its accept fail */
static void
fake_stop(struct fake *f)
{
	__atomic_store_n(&f->stop, 1, __ATOMIC_RELEASE);
	shutdown(f->fd, SHUT_RDWR);
	pthread_join(f->thread, NULL);
	close(f->fd);
}

/* A client of the fakes' ports (and dead_port first, if not 0). */
static struct etcd *
client_of(int dead_port, const struct fake *f, unsigned timeout_ms)
{
	struct etcd_endpoints ep;
	struct etcd *c;
	char spec[128];

	if (dead_port != 0) {
		snprintf(spec, sizeof(spec), "etcd://127.0.0.1:%d,127.0.0.1:%d",
		    dead_port, f->port);
	} else {
		snprintf(spec, sizeof(spec), "etcd://127.0.0.1:%d", f->port);
	}
	cr_assert_eq(etcd_endpoints_parse(spec, &ep), 0);
	cr_assert_eq(etcd_new(&c, &ep, timeout_ms), 0);
	return c;
}

static int
get_from(enum fake_mode mode, struct etcd_kv *kv)
{
	struct fake f;
	struct etcd *c;
	int rc;

	fake_start(&f, mode);
	c = client_of(0, &f, 1000);
	rc = etcd_get(c, "x", kv);
	etcd_delete(&c);
	fake_stop(&f);
	return rc;
}

Test(etcd, an_answer_reads_into_the_record)
{
	struct etcd_kv kv;

	cr_assert_eq(get_from(FAKE_OK, &kv), 0, "%s", cxlp_errormsg());
	cr_assert_eq(kv.create_rev, 3);
	cr_assert_eq(kv.mod_rev, 4);
	cr_assert_str_eq(kv.value, "me");
}

Test(etcd, a_huge_chunked_answer_is_emsgsize)
{
	struct etcd_kv kv;

	cr_assert_eq(get_from(FAKE_HUGE, &kv), -EMSGSIZE, "%s",
	    cxlp_errormsg());
}

Test(etcd, a_truncated_answer_is_an_error)
{
	struct etcd_kv kv;
	int rc = get_from(FAKE_GARBAGE, &kv);

	cr_assert(rc == -EPROTO || rc == -ECONNREFUSED, "rc %d: %s", rc,
	    cxlp_errormsg());
}

Test(etcd, a_silent_server_times_out_within_the_call_budget)
{
	struct etcd_kv kv;
	uint64_t t0 = cxlp_now_ms();

	cr_assert_eq(get_from(FAKE_SILENT, &kv), -ETIMEDOUT);
	cr_assert_lt(cxlp_now_ms() - t0, 2900, "the 1000 ms budget held "
	    "(the fake stays silent for 3000)");
}

Test(etcd, an_http_error_without_etcds_body_is_eproto)
{
	struct etcd_kv kv;

	cr_assert_eq(get_from(FAKE_HTTP500, &kv), -EPROTO);
}

Test(etcd, a_dead_or_unavailable_endpoint_is_passed_for_the_next)
{
	struct fake live, unav;
	struct etcd_kv kv;
	struct etcd *c;
	int dead = 0;

	fake_start(&live, FAKE_OK);
	fake_start(&unav, FAKE_UNAVAILABLE);
	{	/* a port nobody listens on */
		struct fake tmp;

		fake_start(&tmp, FAKE_OK);
		dead = tmp.port;
		fake_stop(&tmp);
	}
	c = client_of(dead, &live, 2000);
	cr_assert_eq(etcd_get(c, "x", &kv), 0, "%s", cxlp_errormsg());
	etcd_delete(&c);
	c = client_of(unav.port, &live, 2000);
	cr_assert_eq(etcd_get(c, "x", &kv), 0, "%s", cxlp_errormsg());
	etcd_delete(&c);
	c = client_of(0, &unav, 2000);
	cr_assert_eq(etcd_get(c, "x", &kv), -EAGAIN);
	etcd_delete(&c);
	fake_stop(&live);
	fake_stop(&unav);
}
