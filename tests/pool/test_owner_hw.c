/*
 * test_owner_hw.c -- suite 'hw': pool/owner.c on a real device DAX
 * (/dev/daxX.Y), where the lock is an flock on a character device and
 * the owner record lives in device memory. It formats the device, so it
 * runs only when CXLP_HW_DEVICE names one it may wipe, and skips with a
 * message otherwise (and where that is no devdax device).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cxlpool.h"
#include "devscan.h"
#include "owner.h"
#include "pool.h"

TestSuite(owner_hw, .timeout = 120);

/* the device CXLP_HW_DEVICE names, or skip */
static const char *
device(void)
{
	const char *path = getenv("CXLP_HW_DEVICE");
	struct devscan_dev d;

	if (path == NULL) {
		cr_skip_test("set CXLP_HW_DEVICE=/dev/daxX.Y to let this test "
		    "wipe that device");
	}
	if (devscan_find(path, &d) != 0 || d.kind != DEVSCAN_DEVDAX) {
		cr_skip_test("%s is not a device DAX", path);
	}
	return path;
}

static int
open_owned(struct pool **p, const char *path, unsigned flags)
{
	struct pool_own own = { .listen = "ipc:///tmp/owner-hw.sock" };

	return pool_open_owned(p, path, flags, NULL, &own, NULL);
}

Test(owner_hw, a_device_has_one_server_and_a_dead_one_does_not_block_it)
{
	const char *path = device();
	struct pool *p = NULL, *q = NULL;
	struct pool_owner o;
	int status;
	pid_t pid;

	cr_assert_eq(open_owned(&p, path, POOL_REFORMAT), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(open_owned(&q, path, POOL_CREATE), -EBUSY);
	cr_assert(strstr(cxlp_errormsg(), "ipc:///tmp/owner-hw.sock") != NULL,
	    "%s", cxlp_errormsg());
	cr_assert_eq(pool_owner_get(p, &o), 0);
	cr_assert_eq(o.pid, (uint32_t)getpid());
	pool_close(&p);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) { /* dies owning it, as after kill -9 */
		_exit(open_owned(&p, path, POOL_CREATE) == 0 ? 0 : 1);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert_eq(status, 0);
	cr_assert_eq(open_owned(&p, path, POOL_CREATE), 0, "%s",
	    cxlp_errormsg());
	cr_assert_eq(pool_owner_get(p, &o), 0);
	cr_assert_eq(o.pid, (uint32_t)getpid());
	pool_close(&p);
	cr_assert_eq(pool_open(&p, path, POOL_RDONLY, NULL), 0);
	cr_assert_eq(pool_owner_get(p, &o), CXLP_E_NOTFOUND);
	pool_close(&p);
}
