/*
 * fuzz_dispatch.c -- libFuzzer target over the metaserver's request
 * dispatch (ms_dispatch) against a real pool file, with no sockets.
 *
 * One pool (a small file under /dev/shm) is created per fuzz process and
 * reformatted every RESET_EVERY inputs, so keys left behind by earlier
 * inputs cannot fill it for good. An input is a script:
 *
 *   u8 mode, then frames, each { u16 len (little-endian), len bytes }
 *
 *   mode bit 0  open a session first (a valid HELLO) ...
 *        bit 1  ... and write its session id and token into every frame
 *                   header, so session-bound ops get past the token check
 *        bit 2  rewrite each REGISTER's locations to fall inside the last
 *                   region this input allocated (off taken modulo its
 *                   length), so the register path is reached, not only
 *                   its bounds check
 *        bit 3  pass each frame through ms_hello_admit first, as a frame
 *                   from a tcp peer would be (the server has a secret)
 *        bit 4  bit 0's HELLO is of protocol version 2 (an old
 *                   handler's session: its frames must be of 2 too)
 *        bits 5-7  the pipe id the frames arrive on
 *
 * After the script the pipe goes away and every session it opened is
 * ended, as when a handler dies. Bugs are: a crash or sanitizer finding, a
 * reply that does not decode as a reply to its request, a pool that fails
 * pool_check (its pin index included), and pins or sessions left behind
 * once every session has ended (contracts 5, 6 and 7).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "err.h"
#include "log.h"
#include "ms_int.h"

#define RESET_EVERY 2000
#define FRAMES_MAX 16
#define FUZZ_SECRET "fuzz-secret"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct ms ms;
static struct ms_config cfg;
static char fuzz_pool[64];
static unsigned runs;
static bool ready;

struct script {
	uint8_t mode;
	uint64_t pipe;
	uint64_t session, token;
	struct proto_loc region; /* last REGION_ALLOC reply; len 0 = none */
	struct pbuf reply, frame;
};

static void
bug(const char *what)
{
	cxlp_panic(__FILE__, __LINE__, what);
}

static void
cleanup(void)
{
	if (ready) {
		ms_fini(&ms);
		unlink(fuzz_pool);
	}
}

static void
ms_open(bool reformat)
{
	ms_config_defaults(&cfg);
	cfg.pool_path = fuzz_pool;
	cfg.size = 64ull << 20;
	cfg.index_slots = 1024;
	cfg.reformat = reformat;
	cfg.grace_ms = 0;
	cfg.workers = 1; /* no RECLAIM waits for room (waitq.c note 3): one
	                  * input would stall the fuzzer for its wait */
	if (ms_init(&ms, &cfg) != 0) {
		fprintf(stderr, "fuzz_dispatch: %s\n", cxlp_errormsg());
		bug("cannot open the fuzz pool");
	}
	memcpy(ms.secret, FUZZ_SECRET, strlen(FUZZ_SECRET));
	ms.secret_len = (uint16_t)strlen(FUZZ_SECRET);
	ready = true;
}

static void
setup(void)
{
	if (ready && ++runs % RESET_EVERY != 0) {
		return;
	}
	if (ready) {
		ms_fini(&ms);
		ms_open(true);
		return;
	}
	/* CXLP_FUZZ_LOG=1 shows the server's log lines (replaying a crash) */
	cxlp_set_log_fn(NULL, NULL, getenv("CXLP_FUZZ_LOG") != NULL ?
	    CXLP_LOG_INFO : CXLP_LOG_OFF);
	snprintf(fuzz_pool, sizeof(fuzz_pool), "/dev/shm/cxlp-fuzz-%d.pool",
	    getpid());
	ms_open(true);
	atexit(cleanup);
}

/* The reply must be a well-formed reply to (op, req_id) of the request,
 * when the request header itself was readable. */
static void
check_reply(const uint8_t *frame, size_t len, const struct pbuf *reply)
{
	struct proto_req_hdr rq;
	struct proto_rep_hdr rp;
	struct preader body;

	if (reply->err != 0 || reply->len < PROTO_REP_HDR_LEN) {
		bug("no reply");
	}
	if (proto_get_req_hdr(frame, len, &rq, &body) != 0 ||
	    rq.op > PROTO_OP_MAX) {
		return; /* answered with op 0: the codec rightly refuses it */
	}
	if (proto_get_rep_hdr(reply->data, reply->len, &rp, &body) != 0 ||
	    rp.req_id != rq.req_id || rp.op != rq.op) {
		fprintf(stderr, "fuzz_dispatch: %s #%llu answered by %s #%llu "
		    "(%s)\n", proto_op_name(rq.op),
		    (unsigned long long)rq.req_id, proto_op_name(rp.op),
		    (unsigned long long)rp.req_id, cxlp_errormsg());
		bug("the reply does not answer its request");
	}
}

/* Remember the region a REGION_ALLOC reply hands out. */
static void
note_region(struct script *s)
{
	struct proto_rep_hdr h;
	struct preader body;
	struct proto_loc loc;

	if (proto_get_rep_hdr(s->reply.data, s->reply.len, &h, &body) == 0 &&
	    h.op == PROTO_OP_REGION_ALLOC && h.status == 0 &&
	    proto_get_loc(&body, &loc) == 0 && loc.region_len > 0) {
		s->region = loc;
	}
}

/* Re-encode a REGISTER with every location inside s->region. Leaves the
 * frame alone if it does not decode. */
static void
fix_register(struct script *s, struct proto_req_hdr *h, struct preader *body)
{
	struct proto_reg *regs = NULL;
	uint32_t flags, n;

	if (s->region.region_len == 0 ||
	    proto_get_regs(body, &flags, &regs, &n) != 0) {
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		regs[i].region = s->region.region;
		regs[i].off = s->region.region_off +
		    regs[i].off % s->region.region_len;
	}
	pbuf_reset(&s->frame);
	proto_put_req_hdr(&s->frame, h);
	proto_put_regs(&s->frame, flags, n, regs);
	free(regs);
}

/* Build the frame to send from the script's bytes into s->frame. */
static void
prepare(struct script *s, const uint8_t *p, size_t len)
{
	struct proto_req_hdr h;
	struct preader body;

	pbuf_reset(&s->frame);
	pbuf_put_bytes(&s->frame, p, len);
	if ((s->mode & 2) && s->session != 0 && len >= PROTO_REQ_HDR_LEN) {
		for (int i = 0; i < 8; i++) {
			s->frame.data[16 + i] = (uint8_t)(s->session >> 8 * i);
			s->frame.data[24 + i] = (uint8_t)(s->token >> 8 * i);
		}
	}
	if ((s->mode & 4) && proto_get_req_hdr(s->frame.data, s->frame.len,
	    &h, &body) == 0 && h.op == PROTO_OP_REGISTER) {
		fix_register(s, &h, &body);
	}
}

static void
send_frame(struct script *s, const uint8_t *p, size_t len)
{
	prepare(s, p, len);
	if (s->frame.err != 0) {
		return;
	}
	if ((s->mode & 8) && ms_hello_admit(&ms, s->frame.data,
	    s->frame.len, &s->reply) != 0) {
		check_reply(s->frame.data, s->frame.len, &s->reply);
		return;
	}
	if (ms_dispatch(&ms, s->pipe, s->frame.data, s->frame.len,
	    &s->reply) != 0) {
		return; /* ENOMEM building the reply */
	}
	check_reply(s->frame.data, s->frame.len, &s->reply);
	note_region(s);
}

/* A valid HELLO (with the secret) on s->pipe; keeps session and token. */
static void
hello(struct script *s)
{
	struct proto_req_hdr h = { .version = (s->mode & 0x10) ? 2 :
		PROTO_VERSION, .op = PROTO_OP_HELLO, .req_id = 1 };
	struct proto_hello m = { .pid = 1, .host = "fuzz", .host_len = 4,
		.secret = (const uint8_t *)FUZZ_SECRET,
		.secret_len = (uint16_t)strlen(FUZZ_SECRET) };
	struct proto_rep_hdr rh;
	struct proto_welcome w;
	struct preader body;

	pbuf_reset(&s->frame);
	proto_put_req_hdr(&s->frame, &h);
	proto_put_hello(&s->frame, &m);
	if (s->frame.err != 0 || ms_dispatch(&ms, s->pipe, s->frame.data,
	    s->frame.len, &s->reply) != 0) {
		return;
	}
	if (proto_get_rep_hdr(s->reply.data, s->reply.len, &rh, &body) == 0 &&
	    rh.status == 0 && proto_get_welcome(&body, &w) == 0) {
		s->session = w.session;
		s->token = w.token;
	}
}

static void
report(void *arg, const char *problem)
{
	fprintf(stderr, "fuzz_dispatch: pool_check: %s\n", problem);
}

/* The pipe goes, every session ends; then nothing may be left. */
static void
finish(struct script *s)
{
	struct pool_stats st;

	ms_pipe_removed(&ms, s->pipe, cxlp_now_ms());
	ms_reap(&ms, UINT64_MAX);
	if (pool_check(ms.pool, report, NULL) != 0) {
		bug("pool_check failed");
	}
	pool_stats(ms.pool, &st);
	if (ms.nsess != 0 || st.pins != 0) {
		bug("sessions or pins outlived their pipe");
	}
}

/* LLVMFuzzerTestOneInput -- libFuzzer's entry point; aborts on a bug. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct script s = { 0 };
	unsigned frames = 0;

	if (size == 0) {
		return 0;
	}
	setup();
	s.mode = data[0];
	s.pipe = 1 + (data[0] >> 5);
	pbuf_init(&s.reply);
	pbuf_init(&s.frame);
	ms_pipe_added(&ms, s.pipe, 0);
	if (s.mode & 1) {
		hello(&s);
	}
	for (size_t at = 1; at + 2 <= size && frames < FRAMES_MAX; frames++) {
		size_t len = (size_t)data[at] | (size_t)data[at + 1] << 8;

		at += 2;
		len = len < size - at ? len : size - at;
		send_frame(&s, data + at, len);
		at += len;
	}
	finish(&s);
	pbuf_fini(&s.reply);
	pbuf_fini(&s.frame);
	return 0;
}
