/*
 * proto_fixture.h -- what the codec tests share: test_proto.c (buffers,
 * field readers and headers of common/proto.c) and test_proto_msg.c (the
 * message bodies of common/proto_msg.c). A seeded random stream, a pool of
 * random key bytes, random field values, and one table of message types,
 * each with a builder of a random full frame and a whole-frame decoder.
 * proto_fixture.c implements it. Each test starts from setup(), so its
 * random stream is the same on every run.
 */
#ifndef CXLP_TEST_PROTO_FIXTURE_H
#define CXLP_TEST_PROTO_FIXTURE_H

#include <criterion/criterion.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "proto.h"

/* A pool of random key bytes that decoded keys point back into. */
extern uint8_t keybytes[CXLP_BATCH_MAX * 8 + CXLP_KEY_MAX];

/* The protocol version the builders write frames of: PROTO_VERSION
 * after setup(); a test of both versions sets it. */
extern uint16_t fx_version;

/* setup -- the suites' .init: seed the stream with 1, fill keybytes. */
void setup(void);

/* rng_seed -- restart the random stream (xorshift64) from s. */
void rng_seed(uint64_t s);
/* rnd -- the next 64 random bits. */
uint64_t rnd(void);
/* rnd_below -- a random number in [0, n); n > 0. */
uint32_t rnd_below(uint32_t n);
/* rnd_fill -- n random bytes into p. */
void rnd_fill(uint8_t *p, size_t n);

/* rnd_loc -- every field of *l random. */
void rnd_loc(struct proto_loc *l);
/* rnd_keys -- n keys of 1..40 bytes, each pointing into keybytes. */
void rnd_keys(size_t n, const void **k, size_t *len);
/* rnd_results -- n valid results: a third are errors with a zero loc. */
void rnd_results(size_t n, struct proto_result *res);
/* rnd_sessions -- n session entries with hosts pointing into keybytes. */
void rnd_sessions(size_t n, struct proto_session_info *v);

/* One message type: how to build a random valid frame of it, and how to
 * decode such a frame whole (header, then body). */
struct msg_type {
	const char *name;
	bool request;                   /* request header, else a reply's */
	void (*build)(struct pbuf *b);  /* appends one full frame */
	int (*decode)(const uint8_t *f, size_t len); /* 0 or a cxlp error */
};

enum { MSG_NTYPES = 19 };
/* Every message type once (its length is checked where it is defined). */
extern const struct msg_type msg_types[MSG_NTYPES];

/* decode_exact -- t->decode on a malloc'd copy of f[0..len) that ends
 * exactly at len, so ASan catches any read past the frame. */
int decode_exact(const struct msg_type *t, const uint8_t *f, size_t len);

#endif /* CXLP_TEST_PROTO_FIXTURE_H */
