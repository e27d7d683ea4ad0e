/*
 * test_pins.c -- metaserver/pins.c: pins owned by sessions and counted,
 * checked directly and against a naive array model under random ops.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "ms_int.h"

TestSuite(pins);

Test(pins, a_pin_is_counted_for_its_session_and_in_the_total)
{
	struct pins p;

	pins_init(&p);
	cr_assert_eq(pins_add(&p, 1, 10), 0);
	cr_assert_eq(pins_add(&p, 1, 10), 0);
	cr_assert_eq(pins_add(&p, 2, 10), 0);
	cr_assert_eq(pins_held(&p, 1, 10), 2);
	cr_assert_eq(pins_held(&p, 2, 10), 1);
	cr_assert_eq(pins_held(&p, 3, 10), 0);
	cr_assert_eq(pins_total(&p, 10), 3);
	cr_assert_eq(pins_total(&p, 11), 0);
	cr_assert_eq(p.count, 3);
	cr_assert_eq(pins_check(&p, NULL, 0), 0);
	pins_fini(&p);
}

Test(pins, drop_releases_only_the_callers_own_pin)
{
	struct pins p;

	pins_init(&p);
	cr_assert_eq(pins_add(&p, 1, 10), 0);
	cr_assert_eq(pins_drop(&p, 2, 10), CXLP_E_NOTPINNED);
	cr_assert_eq(pins_total(&p, 10), 1);
	cr_assert_eq(pins_drop(&p, 1, 10), 0);
	cr_assert_eq(pins_drop(&p, 1, 10), CXLP_E_NOTPINNED);
	cr_assert_eq(pins_total(&p, 10), 0);
	cr_assert_eq(p.count, 0);
	pins_fini(&p);
}

Test(pins, release_session_drops_every_pin_of_that_session_only)
{
	struct pins p;

	pins_init(&p);
	for (uint64_t slot = 0; slot < 1000; slot++) {
		cr_assert_eq(pins_add(&p, 7, slot), 0);
		cr_assert_eq(pins_add(&p, 8, slot), 0);
		cr_assert_eq(pins_add(&p, 7, slot), 0);
	}
	cr_assert_eq(pins_release_session(&p, 7), 2000);
	cr_assert_eq(p.count, 1000);
	for (uint64_t slot = 0; slot < 1000; slot++) {
		cr_assert_eq(pins_held(&p, 7, slot), 0);
		cr_assert_eq(pins_total(&p, slot), 1);
	}
	cr_assert_eq(pins_check(&p, NULL, 0), 0);
	cr_assert_eq(pins_release_session(&p, 7), 0);
	pins_fini(&p);
}

Test(pins, reserve_makes_room_so_later_adds_do_not_grow)
{
	struct pins p;
	struct pins_ent *before;

	pins_init(&p);
	cr_assert_eq(pins_reserve(&p, 500), 0);
	before = p.held.tab;
	for (uint64_t i = 0; i < 500; i++) {
		cr_assert_eq(pins_add(&p, 1 + i % 3, i), 0);
	}
	cr_assert_eq(p.held.tab, before);
	pins_fini(&p);
}

Test(pins, check_reports_a_broken_total)
{
	struct pins p;
	char why[128] = "";

	pins_init(&p);
	cr_assert_eq(pins_add(&p, 1, 10), 0);
	p.count++;
	cr_assert_eq(pins_check(&p, why, sizeof(why)), CXLP_E_CORRUPT);
	cr_assert_neq(why[0], '\0');
	pins_fini(&p);
}

/* Differential: random adds, drops and session releases against a plain
 * count array; small key ranges force collisions, chains and shifts. */
#define NS 6
#define NSLOT 40

Test(pins, random_operations_match_a_naive_model)
{
	static uint64_t model[NS + 1][NSLOT];
	struct pins p;
	unsigned seed = 4242;

	memset(model, 0, sizeof(model));
	pins_init(&p);
	for (int i = 0; i < 20000; i++) {
		uint64_t s = 1 + (uint64_t)(rand_r(&seed) % NS);
		uint64_t slot = (uint64_t)(rand_r(&seed) % NSLOT);
		int op = rand_r(&seed) % 100;

		if (op < 55) {
			cr_assert_eq(pins_add(&p, s, slot * 977), 0);
			model[s][slot]++;
		} else if (op < 97) {
			int want = model[s][slot] > 0 ? 0 : CXLP_E_NOTPINNED;

			cr_assert_eq(pins_drop(&p, s, slot * 977), want);
			model[s][slot] -= want == 0;
		} else {
			uint64_t sum = 0;

			for (int k = 0; k < NSLOT; k++) {
				sum += model[s][k];
				model[s][k] = 0;
			}
			cr_assert_eq(pins_release_session(&p, s), sum);
		}
		if (i % 500 != 0) {
			continue;
		}
		cr_assert_eq(pins_check(&p, NULL, 0), 0);
		for (int k = 0; k < NSLOT; k++) {
			uint64_t tot = 0;

			for (int t = 1; t <= NS; t++) {
				cr_assert_eq(pins_held(&p, (uint64_t)t,
				    (uint64_t)k * 977), model[t][k]);
				tot += model[t][k];
			}
			cr_assert_eq(pins_total(&p, (uint64_t)k * 977), tot);
		}
	}
	pins_fini(&p);
}
