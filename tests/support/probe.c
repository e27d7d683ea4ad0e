/*
 * probe.c -- misbehaving peers for a metaserver's endpoints (probe.h).
 *
 * Plain sockets, no nng: the point is to do what nng never would. A probe
 * connects, sends the bytes of its kind and hangs up; a silent one keeps
 * the connection open for a while first. The prober thread keeps such
 * connections in a small table with their deadlines, so that silent
 * probes overlap the quick ones instead of pausing them.
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <arpa/inet.h>
#include <time.h>
#include <unistd.h>

#include "probe.h"
#include "proc.h"

#define HELD_MAX 16 /* silent connections the prober keeps open at once */
#define HOLD_MAX_MS 3000

/* A REQ peer's SP header (protocol 0x30: req0). */
static const uint8_t sp_req_hdr[8] = { 0, 'S', 'P', 0, 0x00, 0x30, 0, 0 };

/* A socket of family connected to sa, or -errno. */
static int
connect_sa(int family, const struct sockaddr *sa, socklen_t len)
{
	int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		return -errno;
	}
	if (connect(fd, sa, len) != 0) {
		int e = errno;

		close(fd);
		return -e;
	}
	return fd;
}

static int
connect_ipc(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (strlen(path) >= sizeof(sa.sun_path)) {
		return -ENAMETOOLONG;
	}
	strcpy(sa.sun_path, path);
	return connect_sa(AF_UNIX, (struct sockaddr *)&sa, sizeof(sa));
}

static int
connect_tcp(const char *hostport)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	char host[64];
	const char *colon = strrchr(hostport, ':');

	if (colon == NULL || (size_t)(colon - hostport) >= sizeof(host)) {
		return -EINVAL;
	}
	memcpy(host, hostport, (size_t)(colon - hostport));
	host[colon - hostport] = '\0';
	sa.sin_port = htons((uint16_t)atoi(colon + 1));
	if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
		return -EINVAL;
	}
	return connect_sa(AF_INET, (struct sockaddr *)&sa, sizeof(sa));
}

/* probe_connect -- see probe.h */
int
probe_connect(const char *url)
{
	if (strncmp(url, "ipc://", 6) == 0) {
		return connect_ipc(url + 6);
	}
	if (strncmp(url, "tcp://", 6) == 0) {
		return connect_tcp(url + 6);
	}
	return -EINVAL;
}

/* A good header, then a frame that promises 4096 bytes and brings 12 (an
 * ipc frame starts with a type byte, a tcp one with the length). */
static void
send_bad_frame(int fd, bool ipc)
{
	uint8_t f[1 + 8 + 12] = { 0 };
	size_t off = ipc ? 1 : 0;

	f[0] = 1;
	f[off + 6] = 0x10; /* big-endian 4096 */
	memset(f + off + 8, 0xa5, 12);
	(void)!write(fd, sp_req_hdr, sizeof(sp_req_hdr));
	(void)!write(fd, f, off + 8 + 12);
}

/* probe_announce_frame -- see probe.h */
int
probe_announce_frame(int fd, bool ipc, uint64_t len)
{
	uint8_t f[1 + 8];
	size_t off = ipc ? 1 : 0;

	f[0] = 1;
	for (int i = 0; i < 8; i++) {
		f[off + (size_t)i] = (uint8_t)(len >> (56 - 8 * i));
	}
	if (write(fd, sp_req_hdr, sizeof(sp_req_hdr)) !=
	    (ssize_t)sizeof(sp_req_hdr) ||
	    write(fd, f, off + 8) != (ssize_t)(off + 8)) {
		return -errno;
	}
	return 0;
}

/* Send what kind sends before it hangs up. */
static void
probe_play(int fd, enum probe_kind kind, bool ipc)
{
	static const char junk[] = "GET / HTTP/1.0\r\n\r\n";

	switch (kind) {
	case PROBE_HALF_HEADER:
		(void)!write(fd, sp_req_hdr, 4);
		break;
	case PROBE_GARBAGE:
		(void)!write(fd, junk, sizeof(junk) - 1);
		break;
	case PROBE_BAD_FRAME:
		send_bad_frame(fd, ipc);
		break;
	default:
		break;
	}
}

/* probe_once -- see probe.h */
int
probe_once(const char *url, enum probe_kind kind, unsigned hold_ms)
{
	int fd = probe_connect(url);

	if (fd < 0) {
		return fd;
	}
	probe_play(fd, kind, strncmp(url, "ipc://", 6) == 0);
	if (kind == PROBE_SILENT) {
		test_sleep_ms(hold_ms);
	}
	close(fd);
	return 0;
}

/* probe_free_tcp_port -- see probe.h */
unsigned
probe_free_tcp_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t len = sizeof(sa);
	unsigned port = 0;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &len) == 0) {
		port = ntohs(sa.sin_port);
	}
	if (fd >= 0) {
		close(fd);
	}
	return port;
}

struct held {
	int fd; /* -1: free slot */
	uint64_t until_ms;
};

struct prober {
	pthread_t thread;
	atomic_bool stop;
	const char *const *urls;
	unsigned n, period_ms;
	unsigned seed;
	uint64_t probes;
	struct held held[HELD_MAX];
};

static uint64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Close the held connections whose time is up (all of them if all). */
static void
held_expire(struct prober *pr, bool all)
{
	uint64_t now = mono_ms();

	for (unsigned i = 0; i < HELD_MAX; i++) {
		struct held *h = &pr->held[i];

		if (h->fd >= 0 && (all || now >= h->until_ms)) {
			close(h->fd);
			h->fd = -1;
		}
	}
}

/* Keep fd open for a while if a slot is free; else hang up now. */
static void
held_add(struct prober *pr, int fd)
{
	for (unsigned i = 0; i < HELD_MAX; i++) {
		if (pr->held[i].fd < 0) {
			pr->held[i].fd = fd;
			pr->held[i].until_ms = mono_ms() +
			    (unsigned)rand_r(&pr->seed) % HOLD_MAX_MS;
			return;
		}
	}
	close(fd);
}

/* One random probe on url. */
static void
prober_one(struct prober *pr, const char *url)
{
	enum probe_kind kind = (enum probe_kind)(rand_r(&pr->seed) %
	    PROBE_KINDS);
	int fd = probe_connect(url);

	if (fd < 0) {
		return; /* the server's backlog is full, say: try again */
	}
	pr->probes++;
	probe_play(fd, kind, strncmp(url, "ipc://", 6) == 0);
	if (kind == PROBE_SILENT) {
		held_add(pr, fd);
	} else {
		close(fd);
	}
}

static void *
prober_main(void *arg)
{
	struct prober *pr = arg;

	while (!atomic_load(&pr->stop)) {
		for (unsigned i = 0; i < pr->n; i++) {
			prober_one(pr, pr->urls[i]);
		}
		held_expire(pr, false);
		test_sleep_ms(pr->period_ms);
	}
	held_expire(pr, true);
	return NULL;
}

/* prober_start -- see probe.h; urls must outlive the prober. */
int
prober_start(struct prober **out, const char *const urls[], unsigned n,
    unsigned period_ms, unsigned seed)
{
	struct prober *pr = calloc(1, sizeof(*pr));
	int rv;

	*out = NULL;
	if (pr == NULL) {
		return -ENOMEM;
	}
	pr->urls = urls;
	pr->n = n;
	pr->period_ms = period_ms;
	pr->seed = seed;
	for (unsigned i = 0; i < HELD_MAX; i++) {
		pr->held[i].fd = -1;
	}
	if ((rv = pthread_create(&pr->thread, NULL, prober_main, pr)) != 0) {
		free(pr);
		return -rv;
	}
	*out = pr;
	return 0;
}

/* prober_stop -- see probe.h */
uint64_t
prober_stop(struct prober **prp)
{
	struct prober *pr = prp != NULL ? *prp : NULL;
	uint64_t probes;

	if (pr == NULL) {
		return 0;
	}
	atomic_store(&pr->stop, true);
	pthread_join(pr->thread, NULL);
	probes = pr->probes;
	free(pr);
	*prp = NULL;
	return probes;
}
