/*
 * fork.c -- what fork() makes of the library in the child: the handlers
 * connected before it are closed there, and the child connects its own.
 *
 * A process may fork after it used the library (Python multiprocessing's
 * default start method on Linux, a connector that forks its workers). In
 * the child only the forking thread exists: the keepers, prefaulters,
 * async workers and nng's threads of every handler are gone, and a lock
 * one of them held stays held for ever. A handler of the parent cannot go
 * on there, and must not end the parent's session either. So, in the
 * child (DESIGN NOTES):
 *
 * 1. A handler connected before the fork fails every call with
 *    CXLP_E_CLOSED, before it takes a lock, touches its sockets or calls
 *    nng (h_check_open, which every entry point calls first). Its
 *    cxlp_close frees nothing and says no BYE: its memory, threads'
 *    state and mappings are the parent's, in the parent; in the child
 *    they stay until it exits or execs. A reservation or group of it is
 *    released as after a close (its memory only).
 * 2. How a handler knows, with no system call per call (getpid() is one):
 *    a generation, bumped (fork_child_gen) by the pthread_atfork child
 *    hook that handler.c registers when the library is loaded, stamped
 *    on each handler at connect (fork_gen) and compared by h_check_open:
 *    one load and compare.
 * 3. The hook (handler.c, above every module it resets) also makes the
 *    library's process-wide state the child's: the locks of the log
 *    sink, the kept BYEs and async's closed state are made new (a thread
 *    of the parent may have held one), and the BYEs kept for the next
 *    connect are dropped: they name the parent's sessions, which the
 *    parent's next connect sends.
 * 4. nng starts afresh in the child at its first call
 *    (deps/nng/fork-child-starts-afresh.patch), so the child connects
 *    handlers of its own, which work as any. An nng without that patch
 *    aborts the process there: with one, a connect in a child of a
 *    process that had used nng is refused (client.c, -ENOTSUP).
 */
#include "core.h"

static unsigned fork_gen; /* atomic; bumped in every child */

/* fork_child_gen -- see core.h */
void
fork_child_gen(void)
{
	__atomic_add_fetch(&fork_gen, 1, __ATOMIC_RELAXED);
}

/* fork_gen_now -- see core.h */
unsigned
fork_gen_now(void)
{
	return __atomic_load_n(&fork_gen, __ATOMIC_RELAXED);
}

/* h_forked -- see core.h */
bool
h_forked(const struct cxlp_handler *h)
{
	return h->fork_gen != fork_gen_now();
}
