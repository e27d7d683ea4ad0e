/*
 * owner_simfix.c -- see owner_simfix.h.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cxlpool.h"
#include "owner_simfix.h"
#include "pool_test.h"
#include "sim.h"

char osim_path[256];
const struct pool_params osim_params = { .size = 16ull << 20,
	.coherence = POOL_COH_SIM };
char osim_log[16384];
static pthread_mutex_t log_mu = PTHREAD_MUTEX_INITIALIZER;

static void
log_keep(int level, const char *msg, void *arg)
{
	(void)level;
	(void)arg;
	pthread_mutex_lock(&log_mu);
	strncat(osim_log, msg, sizeof(osim_log) - strlen(osim_log) - 2);
	strcat(osim_log, "\n");
	pthread_mutex_unlock(&log_mu);
}

/* osim_log_has -- see owner_simfix.h */
bool
osim_log_has(const char *needle)
{
	bool has;

	pthread_mutex_lock(&log_mu);
	has = strstr(osim_log, needle) != NULL;
	pthread_mutex_unlock(&log_mu);
	return has;
}

static void
unlink_beside(const char *suffix)
{
	char f[300];

	snprintf(f, sizeof(f), "%s%s", osim_path, suffix);
	unlink(f);
}

/* osim_setup -- see owner_simfix.h */
void
osim_setup(void)
{
	struct pool *p = NULL;

	test_pool_path(osim_path, sizeof(osim_path), "/dev/shm");
	osim_log[0] = '\0';
	cxlp_set_log_fn(log_keep, NULL, CXLP_LOG_INFO);
	cr_assert_eq(pool_open(&p, osim_path, POOL_CREATE, &osim_params), 0,
	    "%s", cxlp_errormsg());
	pool_close(&p);
}

/* osim_teardown -- see owner_simfix.h */
void
osim_teardown(void)
{
	(void)sim_forget_hosts(osim_path);
	unlink_beside(".simlock");
	unlink_beside(".simowner-0");
	unlink_beside(".simowner-A");
	unlink_beside(".simowner-B");
	unlink(osim_path);
}
