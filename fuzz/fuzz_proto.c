/*
 * fuzz_proto.c -- libFuzzer target over every frame decoder of
 * common/proto.c.
 *
 * Each input is read as a request (header, then the body decoder its op
 * selects) and as a reply (header, then welcome, loc, results, stats or
 * sessions).
 * Crashes and sanitizer findings are bugs; so is a frame that decodes but
 * does not re-encode to the same bytes (version 2, which gives every
 * valid frame exactly one reading) or to a known part that re-encodes to
 * itself (version 3: proto_check_frame). Seeds of both versions live in
 * fuzz/corpus/proto/ and are written by fuzz/gen_seeds.c; fuzz/proto.dict
 * holds the words of the frames (scripts/fuzz.sh passes it).
 */
#include <stdint.h>
#include <stdlib.h>

#include "err.h"
#include "proto_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* LLVMFuzzerTestOneInput -- libFuzzer's entry point; aborts on a bug. */
int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (proto_check_frame(data, size) != 0) {
		cxlp_panic(__FILE__, __LINE__,
		    "decoded frame does not re-encode to its reading");
	}
	return 0;
}
