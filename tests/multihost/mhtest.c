/*
 * mhtest.c -- see mhtest.h.
 */
#include <stdlib.h>

#include "mhtest.h"

/* mh_host -- see mhtest.h */
const char *
mh_host(const char *host)
{
	const char *one = getenv("MH_ONE_HOST");

	return one != NULL && one[0] != '\0' ? one : host;
}

#define SIM_ARGS "--coherence", "sim", "--evict-free", "0"

/* mh_start -- see mhtest.h */
void
mh_start(uint64_t size, const char *const extra[])
{
	const char *args[16] = { SIM_ARGS };
	size_t n = 4;

	for (size_t i = 0; extra != NULL && extra[i] != NULL && n < 15; i++) {
		args[n++] = extra[i];
	}
	args[n] = NULL;
	cr_assert_eq(test_server_start_host(&srv, size, args,
	    mh_host("A")), 0,
	    "metaserver did not start on host A (log %s)", srv.log);
}

/* mh_restart_on -- see mhtest.h */
void
mh_restart_on(const char *host)
{
	const char *args[] = { SIM_ARGS, NULL };

	snprintf(srv.sim_host, sizeof(srv.sim_host), "%s", mh_host(host));
	cr_assert_eq(test_server_restart(&srv, args), 0,
	    "metaserver did not start again on host %s (log %s)", host,
	    srv.log);
}

/* mh_spawn -- see mhtest.h */
void
mh_spawn(struct test_child *c, const char *host, const char *role,
    const char *arg)
{
	const char *argv[] = { "mh-worker", role, srv.url, arg, NULL };
	char path[4096];

	cr_assert_eq(test_worker_path(path, sizeof(path), "mh-worker"), 0);
	cr_assert_eq(test_child_spawn_host(c, path, argv, mh_host(host)), 0,
	    "cannot start %s", path);
	mh_hear(c, MH_READY);
}

/* mh_say -- see mhtest.h */
void
mh_say(struct test_child *c, char b)
{
	cr_assert_eq(write(c->go_fd, &b, 1), 1, "worker %d: %s", (int)c->pid,
	    strerror(errno));
}

/* mh_hear -- see mhtest.h */
void
mh_hear(struct test_child *c, char b)
{
	char got = 0;

	cr_assert(test_child_read(c, &got, 1), "worker %d ended early (exit "
	    "%d)", (int)c->pid, itest_wait(c));
	cr_assert_eq(got, b, "worker %d said %c, want %c", (int)c->pid, got,
	    b);
}

/* mh_specs -- see mhtest.h */
void
mh_specs(struct test_child *c, const struct mh_spec *s, uint32_t n)
{
	mh_say(c, 'g');
	cr_assert_eq(write(c->go_fd, &n, sizeof(n)), (ssize_t)sizeof(n));
	cr_assert_eq(write(c->go_fd, s, n * sizeof(*s)),
	    (ssize_t)(n * sizeof(*s)));
}

/* mh_result -- see mhtest.h */
struct mh_result
mh_result(struct test_child *c)
{
	struct mh_result r;

	cr_assert(test_child_read(c, &r, sizeof(r)), "reader %d gave no "
	    "result (exit %d)", (int)c->pid, itest_wait(c));
	return r;
}

/* mh_expect_clean -- see mhtest.h */
bool
mh_expect_clean(const struct mh_result *r, const char *what, uint32_t seen)
{
	cr_log_info("%s: %u passes, %u keys seen, %u validates changed",
	    what, r->passes, r->seen, r->changed);
	cr_expect_eq(r->wrong, 0, "%s: %u reads in %u passes found bytes not "
	    "their writer's (first %s)", what, r->wrong, r->passes,
	    r->first_bad);
	cr_expect_eq(r->partial, 0, "%s: %u reads in %u passes found a group "
	    "in part (first %s)", what, r->partial, r->passes, r->first_bad);
	cr_expect_eq(r->error, 0, "%s: a read failed: %s", what,
	    cxlp_strerror(r->error));
	cr_expect_eq(r->missing, 0, "%s: %u acknowledged keys (g: groups) "
	    "not found at the last pass (first %s)", what, r->missing,
	    r->first_bad);
	cr_expect_geq(r->seen, seen, "%s: saw %u keys, want %u at least",
	    what, r->seen, seen);
	return r->wrong == 0 && r->partial == 0 && r->error == 0 &&
	    r->missing == 0 && r->seen >= seen;
}

/* mh_readers_last_pass -- see mhtest.h */
void
mh_readers_last_pass(struct test_child r[], unsigned n,
    const char *const hosts[], const char *const modes[],
    const struct mh_spec spec[], uint32_t ns, uint32_t must)
{
	unsigned bad = 0;

	for (unsigned i = 0; i < n; i++) {
		mh_specs(&r[i], spec, ns);
		mh_say(&r[i], 'd');
	}
	for (unsigned i = 0; i < n; i++) {
		char what[64];
		struct mh_result res = mh_result(&r[i]);

		snprintf(what, sizeof(what), "reader %u on host %s, mode %s",
		    i, hosts[i], modes[i]);
		bad += !mh_expect_clean(&res, what, must);
		mh_wait_ok(&r[i], what);
	}
	cr_assert_eq(bad, 0, "%u of %u readers read wrong (above)", bad, n);
}

/* mh_read_acks -- see mhtest.h */
bool
mh_read_acks(struct test_child *c, struct mh_acks *a, uint32_t want)
{
	while (!a->ended && (want == 0 || a->count < want)) {
		uint32_t k;

		if (!test_child_read(c, &k, sizeof(k))) {
			return want == 0;
		}
		if (k == MH_END) {
			a->ended = true;
			break;
		}
		cr_assert_lt(k, MH_ACKED_MAX, "writer %d: key %u",
		    (int)c->pid, k);
		cr_assert_eq(a->acked[k], 0, "key %u acknowledged twice", k);
		a->acked[k] = 1;
		a->count++;
		a->top = k + 1 > a->top ? k + 1 : a->top;
	}
	return true;
}

/* mh_ack_specs -- see mhtest.h */
uint32_t
mh_ack_specs(const struct mh_acks *a, const char *prefix, uint32_t writer,
    struct mh_spec *out, uint32_t max)
{
	uint32_t end = a->top + 2 * MH_BATCH, n = 0;

	for (uint32_t i = 0; i < end && n < max;) {
		uint8_t must = i < MH_ACKED_MAX && a->acked[i];
		uint32_t j = i;
		struct mh_spec *s = &out[n++];

		while (j < end && (j < MH_ACKED_MAX && a->acked[j]) == must) {
			j++;
		}
		memset(s, 0, sizeof(*s));
		snprintf(s->prefix, sizeof(s->prefix), "%s", prefix);
		s->writer = writer;
		s->first = i;
		s->n = j - i;
		s->must = must;
		i = j;
	}
	cr_assert_lt(n, max, "too many runs of acknowledged keys");
	return n;
}

/* mh_wait_ok -- see mhtest.h */
void
mh_wait_ok(struct test_child *c, const char *what)
{
	int st = itest_wait(c);

	cr_assert_eq(st, 0, "%s (pid %d) exited %d", what, (int)c->pid, st);
}
