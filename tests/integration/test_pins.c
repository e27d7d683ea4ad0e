/*
 * test_pins.c -- DESIGN contract 5 across real sessions: pins are owned and
 * counted, delete of a pinned key is refused with its own error, batch_pin
 * stops at the first miss, and a dead session's pins are released.
 */
#include "itest.h"

TestSuite(pins, .init = itest_start, .fini = itest_stop, .timeout = 60);

Test(pins, pinned_key_cannot_be_deleted_until_unpinned)
{
	struct cxlp_handler *h = itest_connect();

	itest_put(h, "p", 1, 1, 64);
	cr_assert_rc(cxlp_pin(h, "p-1", 3), 0);
	cr_assert_rc(cxlp_delete(h, "p-1", 3), CXLP_E_PINNED);
	cr_assert_rc(cxlp_exists(h, "p-1", 3), 1, "refused delete removed it");
	cr_assert_rc(cxlp_unpin(h, "p-1", 3), 0);
	cr_assert_rc(cxlp_delete(h, "p-1", 3), 0);
	cxlp_close(&h);
}

Test(pins, pins_are_counted_per_session)
{
	struct cxlp_handler *h = itest_connect();

	itest_put(h, "p", 1, 1, 64);
	cr_assert_rc(cxlp_pin(h, "p-1", 3), 0);
	cr_assert_rc(cxlp_pin(h, "p-1", 3), 0);
	cr_assert_rc(cxlp_unpin(h, "p-1", 3), 0);
	cr_assert_rc(cxlp_delete(h, "p-1", 3), CXLP_E_PINNED);
	cr_assert_rc(cxlp_unpin(h, "p-1", 3), 0);
	cr_assert_rc(cxlp_unpin(h, "p-1", 3), CXLP_E_NOTPINNED);
	cr_assert_rc(cxlp_delete(h, "p-1", 3), 0);
	cxlp_close(&h);
}

Test(pins, unpin_without_a_pin_fails)
{
	struct cxlp_handler *h = itest_connect();

	itest_put(h, "p", 1, 1, 64);
	cr_assert_rc(cxlp_unpin(h, "p-1", 3), CXLP_E_NOTPINNED);
	cr_assert_rc(cxlp_unpin(h, "gone", 4), CXLP_E_NOTFOUND);
	cxlp_close(&h);
}

Test(pins, another_session_cannot_release_my_pin)
{
	struct cxlp_handler *owner = itest_connect();
	struct cxlp_handler *other = itest_connect();
	const void *d;
	size_t len;

	itest_put(owner, "p", 1, 1, 64);
	cr_assert_rc(cxlp_retrieve(other, "p-1", 3, CXLP_RETRIEVE_PIN, &d,
	    &len), 0);
	cr_assert_rc(cxlp_unpin(owner, "p-1", 3), CXLP_E_NOTPINNED);
	cr_assert_rc(cxlp_delete(owner, "p-1", 3), CXLP_E_PINNED,
	    "the other session's pin was released by the owner's unpin");
	cr_assert_rc(cxlp_unpin(other, "p-1", 3), 0);
	cr_assert_rc(cxlp_delete(owner, "p-1", 3), 0);
	cxlp_close(&other);
	cxlp_close(&owner);
}

Test(pins, batch_pin_stops_at_the_first_missing_key)
{
	struct cxlp_handler *h = itest_connect();
	const void *kp[4] = { "p-1", "p-2", "missing", "p-3" };
	size_t kl[4] = { 3, 3, 7, 3 }, npinned = 99;
	int st[2];

	for (uint32_t i = 1; i <= 3; i++) {
		itest_put(h, "p", 1, i, 64);
	}
	cr_assert_rc(cxlp_batch_pin(h, 4, kp, kl, &npinned), CXLP_E_NOTFOUND);
	cr_assert_eq(npinned, 2);
	cr_assert_rc(cxlp_delete(h, "p-1", 3), CXLP_E_PINNED);
	cr_assert_rc(cxlp_delete(h, "p-2", 3), CXLP_E_PINNED);
	cr_assert_rc(cxlp_delete(h, "p-3", 3), 0, "key after the miss pinned");
	cr_assert_rc(cxlp_batch_unpin(h, 2, kp, kl, st), 0);
	cr_assert_eq(st[0], 0);
	cr_assert_eq(st[1], 0);
	cr_assert_rc(cxlp_delete(h, "p-1", 3), 0);
	cxlp_close(&h);
}

Test(pins, pins_of_a_killed_handler_are_released)
{
	struct test_child c;
	struct cxlp_handler *h;
	struct cxlp_stats st;
	char b;
	int rc = 0;

	itest_spawn(&c, "pin-and-die", "p-1");
	h = itest_connect();
	itest_put(h, "p", 1, 1, 64);
	itest_go(&c);
	cr_assert(test_child_read(&c, &b, 1), "child did not pin");
	cr_assert_rc(cxlp_delete(h, "p-1", 3), CXLP_E_PINNED);
	kill(c.pid, SIGKILL);
	itest_wait(&c);
	for (int i = 0; i < 1000; i++) { /* the server notices within ms */
		if ((rc = cxlp_delete(h, "p-1", 3)) != CXLP_E_PINNED) {
			break;
		}
		usleep(10000);
	}
	cr_assert_rc(rc, 0);
	st = kv_stats(h);
	cr_assert_eq(st.pins, 0);
	cxlp_close(&h);
}
