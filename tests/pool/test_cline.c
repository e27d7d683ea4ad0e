/*
 * test_cline.c -- pool/cline_*.c: the method is chosen from the CPU (and
 * CXLP_CLINE can only weaken it), and write-back and drop keep the bytes
 * of the lines they touch, at any alignment and length. (That a line
 * really left the cache cannot be seen from user space on coherent
 * hardware; the simulator, sim.c, is where missing ones show.)
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cline.h"

Test(cline, a_method_is_chosen_and_named)
{
	enum cline_method m = cline_init();

	cr_assert_eq(cline_method(), m);
#if defined(__x86_64__)
	cr_assert_neq(m, CLINE_NONE, "every x86-64 CPU has clflush");
#endif
	cr_assert_str_neq(cline_method_name(m), "unknown");
	cr_assert_str_eq(cline_method_name((enum cline_method)99), "unknown");
}

Test(cline, writeback_and_drop_keep_the_bytes_at_any_alignment)
{
	size_t n = 1 << 16;
	unsigned char *buf = malloc(n + 128);

	cr_assert_not_null(buf);
	for (size_t i = 0; i < n + 128; i++) {
		buf[i] = (unsigned char)(i * 7);
	}
	for (size_t off = 0; off < 130; off += 13) {
		cline_writeback(buf + off, n - off);
		cline_drop(buf + off, 1);
		cline_drop(buf + off, 0);
		cline_writeback(buf + off, 0);
	}
	for (size_t i = 0; i < n + 128; i++) {
		cr_assert_eq(buf[i], (unsigned char)(i * 7));
	}
	free(buf);
}
