/*
 * async_fixture.c -- see async_fixture.h.
 */
#include "async_fixture.h"

/* The slow metaserver: REGISTER and LOOKUP replies held for delay_ms in
 * the proxy, and the REGISTERs inside the proxy counted. */
static struct {
	pthread_mutex_t lock;
	unsigned delay_ms;
	int regs, regs_max; /* REGISTERs inside the proxy, most at once */
} slow = { PTHREAD_MUTEX_INITIALIZER, 0, 0, 0 };

enum proxy_action
slow_hook(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	unsigned d;

	(void)arg, (void)req_id, (void)reply_len, (void)delay_ms;
	if (op != PROTO_OP_REGISTER && op != PROTO_OP_LOOKUP) {
		return PROXY_PASS;
	}
	pthread_mutex_lock(&slow.lock);
	if (reply == NULL) { /* request phase */
		if (op == PROTO_OP_REGISTER && ++slow.regs > slow.regs_max) {
			slow.regs_max = slow.regs;
		}
		pthread_mutex_unlock(&slow.lock);
		return PROXY_PASS;
	}
	d = slow.delay_ms;
	pthread_mutex_unlock(&slow.lock);
	usleep(d * 1000u); /* the reply waits here, counted */
	pthread_mutex_lock(&slow.lock);
	if (op == PROTO_OP_REGISTER) {
		slow.regs--;
	}
	pthread_mutex_unlock(&slow.lock);
	return PROXY_PASS;
}

void
slow_set(unsigned delay_ms)
{
	pthread_mutex_lock(&slow.lock);
	slow.delay_ms = delay_ms;
	pthread_mutex_unlock(&slow.lock);
}

int
slow_regs_max(void)
{
	int m;

	pthread_mutex_lock(&slow.lock);
	m = slow.regs_max;
	pthread_mutex_unlock(&slow.lock);
	return m;
}

void
async_start(void)
{
	itest_proxy_start(slow_hook);
}

void
async_stop_all(void)
{
	itest_proxy_stop();
	cr_assert_eq(leak_check(), 0, "leaks (see stderr)");
}

/* A handler through the proxy with max_inflight n, or on srv directly. */
struct cxlp_handler *
connect_n(unsigned n, bool direct)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, direct ? srv.url : px_url),
	    0);
	cr_assert_rc(cxlp_config_set_page_size(cfg, 4096), 0);
	cr_assert_rc(cxlp_config_set_region_size(cfg, 4 * MiB), 0);
	cr_assert_rc(cxlp_config_set_max_inflight(cfg, n), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), 0);
	cxlp_config_delete(&cfg);
	return h;
}

/* ---- what the callbacks saw -------------------------------------------- */


struct async_cb cb = { .lock = PTHREAD_MUTEX_INITIALIZER,
	.cv = PTHREAD_COND_INITIALIZER };

void
cb_reset(void)
{
	pthread_mutex_lock(&cb.lock);
	memset(cb.calls, 0, sizeof(cb.calls));
	memset(cb.rcs, 0, sizeof(cb.rcs));
	cb.notstored = cb.done = cb.outstanding = cb.outstanding_max = 0;
	cb.resubmit_rc = 1;
	pthread_mutex_unlock(&cb.lock);
}

/* A submit returned 0: one more in flight. */
void
cb_submitted(void)
{
	pthread_mutex_lock(&cb.lock);
	if (++cb.outstanding > cb.outstanding_max) {
		cb.outstanding_max = cb.outstanding;
	}
	pthread_mutex_unlock(&cb.lock);
}

void
cb_end(intptr_t idx, int rc, size_t n, const bool stored[])
{
	pthread_mutex_lock(&cb.lock);
	cb.calls[idx]++;
	cb.rcs[idx] = rc;
	for (size_t i = 0; stored != NULL && i < n; i++) {
		cb.notstored += !stored[i];
	}
	cb.outstanding--;
	cb.done++;
	pthread_cond_broadcast(&cb.cv);
	pthread_mutex_unlock(&cb.lock);
}

void
stored_cb(void *arg, int rc, size_t n, const bool stored[],
    const int status[])
{
	(void)status;
	cb_end((intptr_t)arg, rc, n, stored);
}

void
cb_wait(int want)
{
	uint64_t end = cxlp_now_ms() + 20000;

	pthread_mutex_lock(&cb.lock);
	while (cb.done < want && cxlp_now_ms() < end) {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&cb.cv, &cb.lock, &ts);
	}
	pthread_mutex_unlock(&cb.lock);
	cr_assert_eq(cb.done, want, "%d of %d callbacks ran", cb.done, want);
}

/* A request is in flight until its callback has returned: wait for the
 * last one to (its cb_end ran just before). */
void
wait_idle(struct cxlp_handler *h)
{
	uint64_t end = cxlp_now_ms() + 2000;

	while (cxlp_async_inflight(h, NULL) > 0 && cxlp_now_ms() < end) {
		usleep(1000);
	}
	cr_assert_rc(cxlp_async_inflight(h, NULL), 0);
}

void
cb_assert_each_once(int nreq, int want_rc)
{
	for (int i = 0; i < nreq; i++) {
		cr_assert_eq(cb.calls[i], 1, "request %d: %d callbacks", i,
		    cb.calls[i]);
		cr_assert_eq(cb.rcs[i], want_rc, "request %d: rc %d (%s)", i,
		    cb.rcs[i], cxlp_strerror(cb.rcs[i]));
	}
}

/* ---- a request of KPR keys -------------------------------------------- */


/* Pages written for keys prefix-(base + j), j < KPR. */
void
req_fill(struct cxlp_handler *h, struct req *r, const char *prefix,
    uint32_t base)
{
	void *buf;

	for (uint32_t j = 0; j < KPR; j++) {
		r->kl[j] = kv_key(r->keys[j], sizeof(r->keys[j]), prefix,
		    base + j);
		r->kp[j] = r->keys[j];
		r->lens[j] = VLEN;
		cr_assert_rc(cxlp_alloc(h, &r->pages[j], &buf), 0);
		kv_fill(buf, VLEN, 7, base + j);
	}
}

int
req_submit_cb(struct cxlp_handler *h, struct req *r, unsigned flags,
    cxlp_store_done_fn done, intptr_t idx)
{
	int rc = cxlp_batch_store_async(h, KPR, r->kp, r->kl, r->pages,
	    r->lens, flags, done, (void *)idx);

	if (rc == 0) {
		cb_submitted();
	}
	return rc;
}

int
req_submit(struct cxlp_handler *h, struct req *r, unsigned flags,
    intptr_t idx)
{
	return req_submit_cb(h, r, flags, stored_cb, idx);
}

/* Every key prefix-k, k < nkeys, reads back with its bytes. */
void
assert_keys(struct cxlp_handler *h, const char *prefix, uint32_t nkeys)
{
	for (uint32_t k = 0; k < nkeys; k++) {
		char key[24];
		size_t kl = kv_key(key, sizeof(key), prefix, k);
		const void *data;
		size_t len;
		uint32_t writer = 0;

		cr_assert_rc(cxlp_retrieve(h, key, kl, 0, &data, &len), 0,
		    "%s", key);
		cr_assert(len == VLEN && kv_check(data, len, k, &writer) &&
		    writer == 7, "bytes of %s", key);
	}
}

