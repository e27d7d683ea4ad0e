/*
 * proto_check.h -- the oracle shared by the proto fuzz target and the
 * random-frame test in tests/common/test_proto_msg.c.
 */
#ifndef CXLP_PROTO_CHECK_H
#define CXLP_PROTO_CHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* proto_check_frame -- decode data[0..len) as a request and as a reply,
 * each with the body decoder its op selects, reading every decoded key and
 * string byte. Whatever decodes must re-encode to exactly the same bytes
 * (version 2), or to a frame no longer than itself that re-encodes to
 * exactly itself (version 3: what a decoder skips is gone). Returns 0, or
 * -1 if a decoded frame re-encodes otherwise (a codec bug). Never fails
 * because the frame is malformed. */
int proto_check_frame(const uint8_t *data, size_t len);

/* proto_reencode -- decode data[0..len) as a request (request) or a
 * reply with the body decoder its op selects, and encode what was read
 * into out (reset first) at version v (0: the frame's own; HELLO's range
 * then the default, a reply's term 0 in version 2). false when it does
 * not decode. */
bool proto_reencode(const uint8_t *data, size_t len, bool request,
    uint16_t v, struct pbuf *out);

#endif /* CXLP_PROTO_CHECK_H */
