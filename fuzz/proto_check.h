/*
 * proto_check.h -- the oracle shared by the proto fuzz target and the
 * random-frame test in tests/common/test_proto_msg.c.
 */
#ifndef CXLP_PROTO_CHECK_H
#define CXLP_PROTO_CHECK_H

#include <stddef.h>
#include <stdint.h>

/* proto_check_frame -- decode data[0..len) as a request and as a reply,
 * each with the body decoder its op selects, reading every decoded key and
 * string byte. Whatever decodes must re-encode to exactly the same bytes.
 * Returns 0, or -1 if a decoded frame re-encodes differently (a codec
 * bug). Never fails because the frame is malformed. */
int proto_check_frame(const uint8_t *data, size_t len);

#endif /* CXLP_PROTO_CHECK_H */
