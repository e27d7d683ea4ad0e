/*
 * test_evict_hosts.c -- pool/evict.c note 8 and pool/hostslice.c on a sim
 * pool (pool/sim.h): readers on other simulated hosts count their hits
 * in slices of their own, each written back by its host only, and the
 * CLOCK of the server on host A, which drops those lines and compares
 * them with what it saw, spares exactly the keys they read, including
 * keys whose slots share cache lines with another host's. The host table
 * keeps each host's slice across a reopen and says "full" past
 * POOL_HOSTS_MAX hosts.
 *
 * The readers are fork()ed children that name their host in
 * CXLP_SIM_HOST before they attach, as a handler process of that host
 * would, and report through their exit status (no cr_assert in a child).
 * Every host's cache is made before anyone counts, so a host writing
 * back a line holds the other hosts' bytes of it as they were then: a
 * line two hosts write loses one's bytes, as on the hardware.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "coh.h"
#include "err.h"
#include "hostslice.h"
#include "layout.h"
#include "map.h"
#include "pool.h"
#include "pool_int.h"
#include "pool_test.h"
#include "sim.h"

#define PAGES 64
#define SLOTS 128 /* two lines of slots: every line holds many keys */

static char path[128];
static struct pool *p;
static uint64_t sess;
static struct pool_region reg;
static uint64_t slot_of[PAGES];
static int role[PAGES]; /* 0 cold, 1 read on B, 2 on D, 3 on A */

static const char *const role_host[] = { NULL, "B", "D", "A" };

/* coh_host_hash() of simulated host name (this process stays host A) */
static uint64_t
hash_of(const char *name)
{
	uint64_t h;

	setenv("CXLP_SIM_HOST", name, 1);
	h = coh_host_hash();
	setenv("CXLP_SIM_HOST", "A", 1);
	return h;
}

/* host name's cache of the device, made now (sim.h: a copy of it) */
static void
host_cache(const char *name)
{
	struct coh *c;

	setenv("CXLP_SIM_HOST", name, 1);
	cr_assert_eq(coh_open(&c, path, POOL_COH_SIM), 0, "%s",
	    cxlp_errormsg());
	coh_close(&c);
	setenv("CXLP_SIM_HOST", "A", 1);
}

static void
keyname(char *k, size_t n, int i)
{
	snprintf(k, n, "key-%03d", i);
}

/* key i's role: in slot order, B, D, A, cold, B, D, ... so that every
 * line of slots holds keys of every reader next to cold ones */
static void
assign_roles(void)
{
	for (int r = 0; r < PAGES; r++) {
		int rank = 0;

		for (int j = 0; j < PAGES; j++) {
			rank += slot_of[j] < slot_of[r];
		}
		role[r] = (rank % 4 + 1) % 4; /* 0 -> 1 (B), ..., 3 -> 0 */
	}
}

static void
setup(void)
{
	struct pool_params pp = { .size = 32ull << 20, .index_slots = SLOTS,
		.coherence = POOL_COH_SIM };
	struct pool_session s = { .token = 7, .pid = 1 };

	setenv("CXLP_SIM_HOST", "A", 1);
	test_pool_path(path, sizeof(path), "/dev/shm");
	cr_assert_eq(pool_open(&p, path, POOL_CREATE, &pp), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(p->sb->access_hosts, POOL_HOSTS_MAX);
	cr_assert_eq(pool_session_add(p, &s), 0);
	sess = s.id;
	cr_assert_eq(pool_region_alloc(p, s.id, 2u << 20, 32768, &reg), 0);
	for (int i = 0; i < PAGES; i++) {
		struct pool_kv kv;
		bool ins;
		char k[16];

		keyname(k, sizeof(k), i);
		cr_assert_eq(pool_kv_insert(p, s.id, k, strlen(k), reg.id,
		    reg.off + (uint64_t)i * 32768, 100, &kv, &ins), 0);
		slot_of[i] = kv.slot;
	}
	assign_roles();
	host_cache("B");
	host_cache("D");
}

static void
teardown(void)
{
	char lock[160];

	pool_close(&p);
	(void)sim_forget_hosts(path);
	snprintf(lock, sizeof(lock), "%s.simlock", path);
	unlink(lock);
	unlink(path);
}

TestSuite(evict_hosts, .init = setup, .fini = teardown);

static bool
present(int i)
{
	struct pool_kv kv;
	char k[16];

	keyname(k, sizeof(k), i);
	return pool_kv_lookup(p, k, strlen(k), &kv) == 0;
}

/* The child's part: a reader process of host `host` that hit every key
 * of role r once, as a handler's direct reads count them (direct.c
 * access_touch). Exit status: 0, or which step failed. */
static int
reader(const char *host, int r)
{
	struct pmap *head = NULL, *am = NULL;
	const struct pool_sb *sb;
	struct coh *c;
	uint8_t *slice;
	int i;

	setenv("CXLP_SIM_HOST", host, 1);
	if (coh_open(&c, path, POOL_COH_SIM) != 0 ||
	    pmap_open_coh(&head, path, 0, POOL_SB_SIZE, false, c) != 0) {
		return 2;
	}
	sb = pmap_addr(head);
	if ((i = hostslice_find(head, sb, coh_host_hash())) < 0) {
		return 3;
	}
	if (pmap_open_coh(&am, path, sb->access.off, sb->access.len, true,
	    c) != 0) {
		return 4;
	}
	slice = (uint8_t *)pmap_addr(am) + (uint64_t)i *
	    layout_access_stride(sb);
	for (int k = 0; k < PAGES; k++) {
		if (role[k] == r) {
			hostslice_count(am, slice, slot_of[k]);
		}
	}
	pmap_close(&am);
	pmap_close(&head);
	coh_close(&c);
	return 0;
}

/* run reader(role_host[r], r) in a child; its exit status */
static int
run_reader(int r)
{
	pid_t pid = fork();
	int st;

	cr_assert_geq(pid, 0);
	if (pid == 0) {
		_exit(reader(role_host[r], r));
	}
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_assert(WIFEXITED(st), "reader on %s died", role_host[r]);
	return WEXITSTATUS(st);
}

/* every host's readers hit their keys; then the hand takes the cold */
static void
read_and_evict(int round)
{
	int cold = 0;

	for (int r = 1; r <= 3; r++) {
		int rc = run_reader(r);

		cr_assert_eq(rc, 0, "round %d: reader on %s failed at step %d",
		    round, role_host[r], rc);
	}
	for (int i = 0; i < PAGES; i++) {
		cold += role[i] == 0 && present(i);
	}
	cr_assert_eq(pool_evict_clock(p, (size_t)cold, POOL_EVICT_PRESSURE,
	    NULL), (size_t)cold);
	for (int i = 0; i < PAGES; i++) {
		cr_assert_eq(present(i), role[i] != 0, "round %d: key %d "
		    "(slot %llu, read on %s) %s", round, i,
		    (unsigned long long)slot_of[i],
		    role[i] ? role_host[role[i]] : "no host",
		    role[i] ? "was evicted" : "was spared");
	}
}

Test(evict_hosts, keys_read_on_other_hosts_survive_and_unread_ones_go)
{
	int a = pool_host_slice(p, hash_of("A"));
	int b = pool_host_slice(p, hash_of("B"));
	int d = pool_host_slice(p, hash_of("D"));

	cr_assert(a >= 0 && b >= 0 && d >= 0 && a != b && b != d && a != d,
	    "slices %d %d %d: %s", a, b, d, cxlp_errormsg());
	read_and_evict(1);
	/* the hand saw those counts: a second round counts only anew; the
	 * cold keys come back, the readers read their keys again */
	for (int i = 0; i < PAGES; i++) {
		struct pool_kv kv;
		bool ins;
		char k[16];

		if (role[i] != 0) {
			continue;
		}
		keyname(k, sizeof(k), i);
		cr_assert_eq(pool_kv_insert(p, sess, k, strlen(k), reg.id,
		    reg.off + (uint64_t)i * 32768, 100, &kv, &ins), 0);
		slot_of[i] = kv.slot;
	}
	read_and_evict(2);
	cr_assert_eq(pool_check(p, NULL, NULL), 0);
}

Test(evict_hosts, the_server_writes_no_slice)
{
	const uint8_t *dev;
	struct pmap *m;
	int b = pool_host_slice(p, hash_of("B"));
	uint64_t off = p->sb->access.off +
	    (uint64_t)b * layout_access_stride(p->sb);

	cr_assert_geq(b, 0);
	cr_assert_eq(pool_host_slice(p, hash_of("D")), b + 1);
	cr_assert_eq(run_reader(1), 0);
	cr_assert_eq(pool_evict_clock(p, 1, POOL_EVICT_PRESSURE, NULL), 1);
	/* the device (the pool file itself) holds B's counts, untouched */
	cr_assert_eq(off % 4096, 0, "slices are page aligned");
	cr_assert_eq(pmap_open(&m, path, off, 4096, false), 0);
	dev = pmap_addr(m);
	for (int i = 0; i < PAGES; i++) {
		cr_assert_eq(dev[slot_of[i]], role[i] == 1, "slot %llu",
		    (unsigned long long)slot_of[i]);
	}
	pmap_close(&m);
}

Test(evict_hosts, a_host_keeps_its_slice_and_the_table_fills)
{
	char name[8];
	int first = pool_host_slice(p, hash_of("B"));

	cr_assert_eq(first, 0);
	for (unsigned i = 1; i < POOL_HOSTS_MAX; i++) {
		snprintf(name, sizeof(name), "H%u", i);
		cr_assert_eq(pool_host_slice(p, hash_of(name)), (int)i);
	}
	cr_assert_eq(pool_host_slice(p, hash_of("late")), CXLP_E_NOSPACE);
	cr_assert(strstr(cxlp_errormsg(), "host table full") != NULL, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_host_slice(p, 0), -EINVAL);
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, 0, NULL), 0, "%s", cxlp_errormsg());
	cr_assert_eq(pool_host_slice(p, hash_of("B")), 0, "B moved");
	cr_assert_eq(pool_host_slice(p, hash_of("H7")), 7);
	/* a reader of host late finds no slice and counts nothing */
	setenv("CXLP_SIM_HOST", "late", 1);
	{
		struct coh *c;
		struct pmap *head;

		cr_assert_eq(coh_open(&c, path, POOL_COH_SIM), 0);
		cr_assert_eq(pmap_open_coh(&head, path, 0, POOL_SB_SIZE, false,
		    c), 0);
		cr_assert_eq(hostslice_find(head, pmap_addr(head),
		    coh_host_hash()), -1);
		pmap_close(&head);
		coh_close(&c);
	}
	setenv("CXLP_SIM_HOST", "A", 1);
}

Test(evict_hosts, a_host_pool_has_one_slice_for_every_host)
{
	struct pool *hp;
	char hpath[128];
	struct pool_params pp = { .size = 32ull << 20 };

	test_pool_path(hpath, sizeof(hpath), "/dev/shm");
	cr_assert_eq(pool_open(&hp, hpath, POOL_CREATE, &pp), 0);
	cr_assert_eq(hp->sb->access_hosts, 0);
	cr_assert_eq(pool_host_slice(hp, hash_of("B")), 0);
	for (unsigned i = 0; i < POOL_HOSTS_MAX; i++) {
		cr_assert_eq(hp->sb->hosts[i], 0, "a host pool wrote its table");
	}
	pool_close(&hp);
	unlink(hpath);
}
