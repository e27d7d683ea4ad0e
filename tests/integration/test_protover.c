/*
 * test_protover.c -- peers of another protocol version (common/proto.h,
 * PROTO_VERSION) are refused at HELLO with CXLP_E_VERSION naming both
 * versions, in both directions: a handler of the previous version against
 * this metaserver (its frozen HELLO frame, below), and this handler
 * against a metaserver of the previous version (a proxy that stamps the
 * server's replies with version 1, which is all that tells such a server's
 * WELCOME apart: the header layout is the same).
 */
#include <stdlib.h>

#include "itest.h"
#include "rawclient.h"

#define OLD_VERSION 1

/* the HELLO a version-1 handler sent first: header (magic "CXLP",
 * version 1, op HELLO, request id 1, no session, no token, no flags) and
 * an empty body; written out byte by byte, as that encoder wrote it */
static const uint8_t old_hello[PROTO_REQ_HDR_LEN] = {
	0x43, 0x58, 0x4c, 0x50, 0x01, 0x00, 0x01, 0x00, /* magic, ver, op */
	0x01, 0, 0, 0, 0, 0, 0, 0,                      /* req_id */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* session */
	0, 0, 0, 0, 0, 0, 0, 0,                         /* token */
};

static enum proxy_action
old_server(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	(void)arg, (void)op, (void)req_id, (void)delay_ms;
	if (reply != NULL && *reply_len >= 6) {
		reply[4] = OLD_VERSION; /* u16 version, little-endian */
		reply[5] = 0;
	}
	return PROXY_PASS;
}

TestSuite(protover, .fini = itest_proxy_stop, .timeout = 60);

Test(protover, a_handler_of_the_previous_version_is_refused_at_hello)
{
	struct raw_client c;
	struct cxlp_handler *ok;
	struct preader body;
	uint8_t *rep = NULL;
	size_t len = 0;

	itest_proxy_start(NULL);
	cr_assert_eq(raw_open(&c, srv.url), 0);
	cr_assert_eq(raw_call(&c, old_hello, sizeof(old_hello), &rep, &len), 0,
	    "no reply to an old HELLO");
	cr_assert_eq(raw_reply(PROTO_OP_HELLO, rep, len, &body),
	    CXLP_E_VERSION);
	free(rep);
	raw_close(&c);
	cr_assert(test_file_has(srv.log, "version: 1, expected 2"),
	    "the server's log does not name both versions");
	ok = itest_connect(); /* and it goes on serving its own version */
	cxlp_close(&ok);
}

Test(protover, a_metaserver_of_the_previous_version_is_refused_at_hello)
{
	struct cxlp_config *cfg = NULL;
	struct cxlp_handler *h = NULL;

	itest_proxy_start(old_server);
	cr_assert_rc(cxlp_config_new(&cfg), 0);
	cr_assert_rc(cxlp_config_set_server(cfg, px_url), 0);
	cr_assert_rc(cxlp_config_set_retries(cfg, 0), 0);
	cr_assert_rc(cxlp_connect(&h, cfg), CXLP_E_VERSION);
	cr_assert(strstr(cxlp_errormsg(), "version: 1, expected 2") != NULL,
	    "message: %s", cxlp_errormsg());
	cr_assert_null(h);
	cxlp_config_delete(&cfg);
}

/* A metaserver of this version that predates request groups answers
 * their op CXLP_E_BADOP (as for any op it does not know): the proxy
 * plays one. The handler says so, holds nothing, and every other call
 * goes on working. */
static enum proxy_action
pre_group_server(void *arg, uint16_t op, uint64_t req_id, uint8_t *reply,
    size_t *reply_len, unsigned *delay_ms)
{
	int32_t st = CXLP_E_BADOP;

	(void)arg, (void)req_id, (void)delay_ms;
	if (reply != NULL && op == PROTO_OP_GROUP &&
	    *reply_len >= PROTO_REP_HDR_LEN) {
		memcpy(reply + 16, &st, sizeof(st)); /* i32 status */
		memset(reply + 20, 0, 4);            /* u32 flags */
		*reply_len = PROTO_REP_HDR_LEN;
	}
	return PROXY_PASS;
}

Test(protover, a_metaserver_without_request_groups_is_named_as_such)
{
	struct cxlp_handler *h;
	struct cxlp_group *g = NULL;
	struct cxlp_stats st;

	itest_proxy_start(pre_group_server);
	h = itest_connect_via_proxy(2000, 1);
	cr_assert_rc(cxlp_group_open(h, "g", 1, 4, 0, 0, &g), CXLP_E_BADOP);
	cr_assert(strstr(cxlp_errormsg(), "predates request groups") != NULL,
	    "message: %s", cxlp_errormsg());
	cr_assert_null(g);
	cr_assert_rc(cxlp_stats(h, &st), 0);
	cr_assert_eq(st.pages_reserved, 0, "the admission's pages are held");
	cr_assert_eq(st.pages_allocated, 0);
	(void)itest_put(h, "plain", 1, 0, 64); /* the rest works */
	cr_assert_eq(itest_get_check(h, "plain", 0), 1);
	cxlp_close(&h);
}
