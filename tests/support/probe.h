/*
 * probe.h -- test support: peers that open a connection to a metaserver
 * endpoint and misbehave before the SP handshake is over (hang up at
 * once, send half a header, send garbage, stay silent), the way a health
 * probe, a port scanner or a second server's start-up check does. One
 * probe at a time (probe_once), or a prober thread that keeps at it on
 * several endpoints (prober_start). Never asserts; no Criterion calls.
 */
#ifndef CXLP_TEST_PROBE_H
#define CXLP_TEST_PROBE_H

#include <stdbool.h>
#include <stdint.h>

enum probe_kind {
	PROBE_CLOSE,       /* connect, hang up at once */
	PROBE_HALF_HEADER, /* 4 of the 8 SP header bytes, then hang up */
	PROBE_GARBAGE,     /* bytes that are no SP header, then hang up */
	PROBE_BAD_FRAME,   /* a good SP header, then a truncated frame */
	PROBE_SILENT,      /* connect, say nothing for hold_ms, hang up */
	PROBE_KINDS
};

/* probe_once -- connect to url (ipc://PATH or tcp://HOST:PORT), play kind
 * (PROBE_SILENT holds the connection hold_ms), hang up. 0 or -errno. */
int probe_once(const char *url, enum probe_kind kind, unsigned hold_ms);

/* probe_connect -- a plain socket connected to url (ipc://PATH or
 * tcp://HOST:PORT), or -errno. The caller closes it. */
int probe_connect(const char *url);

/* probe_announce_frame -- on fd, a REQ peer's SP header, then the start of
 * a frame that says it is len bytes long (ipc framing if ipc); the body
 * never follows. 0 or -errno. */
int probe_announce_frame(int fd, bool ipc, uint64_t len);

/* probe_free_tcp_port -- a loopback tcp port nothing listens on right
 * now (the kernel's pick for port 0); 0 on failure. */
unsigned probe_free_tcp_port(void);

struct prober;

/* prober_start -- a thread that, every period_ms, plays a random probe
 * kind on each of the n urls (silent ones held 0..3 s, several at once),
 * until prober_stop. Returns 0 and *out, or -errno. */
int prober_start(struct prober **out, const char *const urls[], unsigned n,
    unsigned period_ms, unsigned seed);

/* prober_stop -- stop and free; the number of probes played. NULL-safe. */
uint64_t prober_stop(struct prober **p);

#endif /* CXLP_TEST_PROBE_H */
