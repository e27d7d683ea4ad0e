/*
 * test_proto_msg.c -- tests of common/proto_msg.c, the message bodies.
 *
 * Every message type goes through one table (proto_fixture.h: build a
 * random full frame, decode it whole), so truncation at every byte, a
 * trailing byte and random mutation are checked for all types by the same
 * loops. Round trips compare every field. The limits, built by hand at
 * each bound and one past it since the encoders write what they are
 * given, and lying counts: test_proto_msg_limits.c. Buffers and headers
 * (common/proto.c): test_proto.c.
 */
#include "proto_check.h"
#include "proto_fixture.h"

TestSuite(proto_msg, .init = setup);

/* ---- round trips ---- */

Test(proto_msg, hello_and_welcome_round_trip)
{
	for (int i = 0; i < 100; i++) {
		struct proto_hello m = { (uint32_t)rnd(), rnd_below(2), rnd(),
			rnd(), (const char *)keybytes + i,
			(uint16_t)rnd_below(PROTO_HOST_MAX + 1),
			keybytes + 2 * i,
			(uint16_t)rnd_below(PROTO_SECRET_MAX + 1), 0, 0, 0,
			0, 0 }, hm;
		struct proto_welcome w = { rnd(), rnd(), rnd(), rnd(),
			(const char *)keybytes + i,
			(uint16_t)rnd_below(PROTO_PATH_MAX + 1), i % 2 != 0,
			{ rnd(), rnd(), rnd(), rnd() } }, wm;
		struct preader r;
		struct pbuf b;

		pbuf_init(&b);
		proto_put_hello(&b, &m);
		preader_init(&r, b.data, b.len);
		cr_assert_eq(proto_get_hello(&r, &hm), 0);
		cr_assert(hm.pid == m.pid && hm.flags == m.flags &&
		    hm.start_time == m.start_time &&
		    hm.instance_id == m.instance_id);
		cr_assert_eq(hm.host_len, m.host_len);
		cr_assert_arr_eq(hm.host, m.host, m.host_len);
		cr_assert_eq(hm.secret_len, m.secret_len);
		if (m.secret_len > 0) {
			cr_assert_arr_eq(hm.secret, m.secret, m.secret_len);
		}
		pbuf_reset(&b);
		proto_put_welcome(&b, &w);
		preader_init(&r, b.data, b.len);
		cr_assert_eq(w.has_id ? proto_get_welcome_id(&r, &wm) :
		    proto_get_welcome(&r, &wm), 0);
		cr_assert(wm.session == w.session && wm.token == w.token &&
		    wm.pool_size == w.pool_size && wm.align == w.align);
		cr_assert_eq(wm.path_len, w.path_len);
		cr_assert_arr_eq(wm.path, w.path, w.path_len);
		cr_assert_eq(wm.has_id, w.has_id);
		cr_assert(!w.has_id || (wm.id.nonce == w.id.nonce &&
		    wm.id.boot == w.id.boot && wm.id.dev == w.id.dev &&
		    wm.id.ino == w.id.ino));
		pbuf_fini(&b);
	}
}

/* v2 reader of b */
static void
reader_v2(struct preader *r, const struct pbuf *b, size_t len)
{
	preader_init(r, b->data, len);
	r->version = 2;
}

/* A WELCOME to a HELLO that asked for the pool identity must carry it,
 * and in version 2 one to a HELLO that did not (an old handler's) must
 * not; in version 3 a reader that does not ask skips it. */
Test(proto_msg, a_welcome_has_the_pool_identity_iff_it_was_asked_for)
{
	struct proto_welcome w = { 1, 2, 3, 4096, "/p", 2, true,
		{ 5, 6, 7, 8 } }, wm;
	struct preader r;
	struct pbuf b;

	pbuf_init(&b);
	b.version = 2;
	proto_put_welcome(&b, &w);
	reader_v2(&r, &b, b.len);
	cr_assert_eq(proto_get_welcome(&r, &wm), CXLP_E_PROTO);
	reader_v2(&r, &b, b.len - 32);
	cr_assert_eq(proto_get_welcome_id(&r, &wm), CXLP_E_PROTO);
	reader_v2(&r, &b, b.len - 32);
	cr_assert_eq(proto_get_welcome(&r, &wm), 0);
	cr_assert(!wm.has_id);
	reader_v2(&r, &b, b.len);
	cr_assert_eq(proto_get_welcome_id(&r, &wm), 0);
	cr_assert(wm.has_id && wm.id.nonce == 5 && wm.id.ino == 8);
	preader_init(&r, b.data, b.len); /* version 3 */
	cr_assert_eq(proto_get_welcome(&r, &wm), 0);
	cr_assert(!wm.has_id && wm.session == 1 && wm.path_len == 2);
	preader_init(&r, b.data, b.len - 32);
	cr_assert_eq(proto_get_welcome_id(&r, &wm), CXLP_E_PROTO);
	pbuf_fini(&b);
}

Test(proto_msg, region_bodies_and_loc_round_trip)
{
	for (int i = 0; i < 100; i++) {
		uint64_t len = rnd(), ps = rnd(), len2, ps2;
		uint32_t reg = (uint32_t)rnd(), gen = (uint32_t)rnd(), reg2,
		    gen2;
		struct proto_loc l, l2;
		struct preader r;
		struct pbuf b;

		rnd_loc(&l);
		pbuf_init(&b);
		proto_put_region_req(&b, len, ps);
		proto_put_region_free(&b, reg, gen);
		proto_put_loc(&b, &l);
		preader_init(&r, b.data, 16);
		cr_assert_eq(proto_get_region_req(&r, &len2, &ps2), 0);
		cr_assert(len2 == len && ps2 == ps);
		preader_init(&r, b.data + 16, 8);
		cr_assert_eq(proto_get_region_free(&r, &reg2, &gen2), 0);
		cr_assert(reg2 == reg && gen2 == gen);
		preader_init(&r, b.data + 24, b.len - 24);
		cr_assert_eq(proto_get_loc(&r, &l2), 0);
		cr_assert_eq(memcmp(&l, &l2, sizeof(l)), 0);
		pbuf_fini(&b);
	}
}

Test(proto_msg, keys_round_trip_pointing_into_the_frame)
{
	for (int i = 0; i < 50; i++) {
		size_t n = 1 + rnd_below(300), len[300];
		const void *k[300];
		uint32_t flags = rnd_below(2), f2, n2;
		struct proto_key *out;
		struct preader r;
		struct pbuf b;

		rnd_keys(n, k, len);
		pbuf_init(&b);
		proto_put_keys(&b, flags, n, k, len);
		preader_init(&r, b.data, b.len);
		cr_assert_eq(proto_get_keys(&r, &f2, &out, &n2), 0);
		cr_assert(f2 == flags && n2 == n);
		for (size_t j = 0; j < n; j++) {
			cr_assert_eq(out[j].len, len[j]);
			cr_assert_arr_eq(out[j].data, k[j], len[j]);
			cr_assert(out[j].data > b.data &&
			    out[j].data + out[j].len <= b.data + b.len);
		}
		free(out);
		pbuf_fini(&b);
	}
}

Test(proto_msg, regs_round_trip)
{
	for (int i = 0; i < 50; i++) {
		size_t n = 1 + rnd_below(300), len[300];
		const void *k[300];
		struct proto_reg g[300], *out;
		uint32_t flags = rnd_below(2), f2, n2;
		struct preader r;
		struct pbuf b;

		rnd_keys(n, k, len);
		for (size_t j = 0; j < n; j++) {
			g[j] = (struct proto_reg){ { k[j], (uint16_t)len[j] },
				(uint32_t)rnd(), rnd(), rnd() };
		}
		pbuf_init(&b);
		proto_put_regs(&b, flags, n, g);
		preader_init(&r, b.data, b.len);
		cr_assert_eq(proto_get_regs(&r, &f2, &out, &n2), 0);
		cr_assert(f2 == flags && n2 == n);
		for (size_t j = 0; j < n; j++) {
			cr_assert_eq(out[j].key.len, g[j].key.len);
			cr_assert_arr_eq(out[j].key.data, k[j], len[j]);
			cr_assert(out[j].region == g[j].region &&
			    out[j].off == g[j].off && out[j].len == g[j].len);
		}
		free(out);
		pbuf_fini(&b);
	}
}

Test(proto_msg, results_round_trip)
{
	for (int i = 0; i < 50; i++) {
		struct proto_result res[200], out[200];
		size_t n = rnd_below(200);
		uint32_t n2;
		struct preader r;
		struct pbuf b;

		rnd_results(n, res);
		pbuf_init(&b);
		b.version = PROTO_VERSION_MIN + (uint16_t)(i % 2);
		proto_put_results(&b, n, res);
		cr_assert_eq(b.len, 4 + (b.version >= 3 ? 2 : 0) +
		    n * PROTO_RESULT_LEN);
		preader_init(&r, b.data, b.len);
		r.version = b.version;
		cr_assert_eq(proto_get_results(&r, out, 200, &n2), 0);
		cr_assert_eq(n2, n);
		for (size_t j = 0; j < n; j++) {
			cr_assert(out[j].status == res[j].status &&
			    out[j].flags == res[j].flags);
			cr_assert_eq(memcmp(&out[j].loc, &res[j].loc,
			    sizeof(res[j].loc)), 0);
		}
		pbuf_fini(&b);
	}
}

Test(proto_msg, stats_round_trip_and_extra_values_are_skipped)
{
	uint64_t v[PROTO_STATS_MAX], out[PROTO_STATS_MAX];
	uint32_t n;
	struct preader r;
	struct pbuf b;

	for (size_t i = 0; i < PROTO_STATS_MAX; i++) {
		v[i] = rnd();
	}
	pbuf_init(&b);
	proto_put_stats(&b, PROTO_STATS_MAX, v);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_stats(&r, out, PROTO_STATS_MAX, &n), 0);
	cr_assert_eq(n, PROTO_STATS_MAX);
	cr_assert_arr_eq(out, v, sizeof(v));
	memset(out, 0, sizeof(out));
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_stats(&r, out, PROTO_STAT_COUNT, &n), 0);
	cr_assert_eq(n, PROTO_STAT_COUNT, "n counts what was stored");
	cr_assert_arr_eq(out, v, PROTO_STAT_COUNT * sizeof(v[0]));
	cr_assert_eq(out[PROTO_STAT_COUNT], 0, "nothing stored past max");
	pbuf_fini(&b);
}

Test(proto_msg, sessions_round_trip_with_hosts_pointing_into_the_frame)
{
	for (int i = 0; i < 50; i++) {
		struct proto_session_info v[40], *out;
		size_t n = rnd_below(40);
		uint32_t n2;
		struct preader r;
		struct pbuf b;

		rnd_sessions(n, v);
		pbuf_init(&b);
		proto_put_sessions(&b, n, v);
		preader_init(&r, b.data, b.len);
		cr_assert_eq(proto_get_sessions(&r, &out, &n2), 0, "%s",
		    cxlp_errormsg());
		cr_assert_eq(n2, n);
		cr_assert_eq(out == NULL, n == 0);
		for (size_t j = 0; j < n; j++) {
			cr_assert(out[j].id == v[j].id &&
			    out[j].pid == v[j].pid &&
			    out[j].flags == v[j].flags &&
			    out[j].start_time == v[j].start_time &&
			    out[j].instance == v[j].instance &&
			    out[j].regions == v[j].regions &&
			    out[j].pins == v[j].pins, "entry %zu", j);
			cr_assert_eq(out[j].host_len, v[j].host_len);
			cr_assert_eq(memcmp(out[j].host, v[j].host,
			    v[j].host_len), 0);
			cr_assert((const uint8_t *)out[j].host >= b.data &&
			    (const uint8_t *)out[j].host + out[j].host_len <=
			    b.data + b.len, "host points into the frame");
		}
		free(out);
		pbuf_fini(&b);
	}
}

/* ---- every type: truncation, trailing bytes ---- */

Test(proto_msg, every_message_truncated_at_every_byte_is_rejected)
{
	for (size_t t = 0; t < 2 * MSG_NTYPES; t++) {
		fx_version = t < MSG_NTYPES ? 2 : 3;
		for (int rep = 0; rep < 5; rep++) {
			struct pbuf b;

			pbuf_init(&b);
			msg_types[t % MSG_NTYPES].build(&b);
			cr_assert_eq(b.err, 0);
			cr_assert_eq(decode_exact(&msg_types[t % MSG_NTYPES],
			    b.data, b.len), 0, "%s: %s",
			    msg_types[t % MSG_NTYPES].name, cxlp_errormsg());
			for (size_t cut = 0; cut < b.len; cut++) {
				cr_assert_eq(decode_exact(&msg_types[t %
				    MSG_NTYPES], b.data, cut), CXLP_E_PROTO,
				    "%s v%u cut at %zu of %zu",
				    msg_types[t % MSG_NTYPES].name, fx_version,
				    cut, b.len);
			}
			pbuf_fini(&b);
		}
	}
}

/* version 2 is strict (version 3 skips them: test_proto.c) */
Test(proto_msg, every_message_with_a_trailing_byte_is_rejected)
{
	fx_version = 2;
	for (size_t t = 0; t < MSG_NTYPES; t++) {
		struct pbuf b;

		pbuf_init(&b);
		msg_types[t].build(&b);
		pbuf_put_bytes(&b, "", 1);
		cr_assert_eq(decode_exact(&msg_types[t], b.data, b.len),
		    CXLP_E_PROTO, "%s", msg_types[t].name);
		pbuf_fini(&b);
	}
}

/* ---- reserved bits and zero locs ---- */

Test(proto_msg, reserved_flag_bits_are_rejected)
{
	struct proto_hello m = { .flags = 0x80 }, hm;
	struct proto_key *k;
	struct proto_reg *g;
	uint32_t flags, n;
	struct preader r;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_hello(&b, &m);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_hello(&r, &hm), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "hello.flags") != NULL);
	pbuf_reset(&b);
	proto_put_keys(&b, 4, 1, (const void *[]){ "k" }, (size_t[]){ 1 });
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_keys(&r, &flags, &k, &n), CXLP_E_PROTO);
	cr_assert_null(k);
	pbuf_reset(&b);
	proto_put_regs(&b, 4, 1, &(struct proto_reg){ { keybytes, 1 }, 1, 2,
	    3 });
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_regs(&r, &flags, &g, &n), CXLP_E_PROTO);
	cr_assert_null(g);
	pbuf_fini(&b);
}

/* PROTO_HELLO_HOSTID: the host follows the lease, and 0 is no host */
Test(proto_msg, hello_host_round_trips_and_host_zero_is_refused)
{
	struct proto_hello m = { .flags = PROTO_HELLO_HOSTID |
	    PROTO_HELLO_LEASE, .lease_ms = 7, .host_hash = 0x1234abcdull }, hm;
	struct preader r;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_hello(&b, &m);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_hello(&r, &hm), 0, "%s", cxlp_errormsg());
	cr_assert_eq(hm.host_hash, 0x1234abcdull);
	cr_assert_eq(hm.lease_ms, 7);
	pbuf_reset(&b);
	m.host_hash = 0;
	proto_put_hello(&b, &m);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_hello(&r, &hm), CXLP_E_PROTO);
	cr_assert(strstr(cxlp_errormsg(), "hello.host") != NULL, "%s",
	    cxlp_errormsg());
	pbuf_reset(&b);
	m.flags = PROTO_HELLO_HOSTID; /* cut inside the host */
	m.host_hash = 5;
	proto_put_hello(&b, &m);
	preader_init(&r, b.data, b.len - 1);
	cr_assert_eq(proto_get_hello(&r, &hm), CXLP_E_PROTO);
	pbuf_fini(&b);
}

Test(proto_msg, result_flags_status_and_loc_are_checked)
{
	struct proto_result out[1];
	uint32_t n;
	struct preader r;
	struct pbuf b;
	static const struct {
		int32_t status;
		uint32_t flags;
		uint32_t region;
		int rc;
	} rows[] = {
		{ 0, PROTO_R_NEW, 1, 0 },
		{ 0, 2, 1, CXLP_E_PROTO },           /* reserved flag bit */
		{ 1, 0, 0, CXLP_E_PROTO },           /* positive status */
		{ CXLP_E_NOTFOUND, 0, 0, 0 },        /* error, zero loc */
		{ CXLP_E_NOTFOUND, 0, 9, CXLP_E_PROTO }, /* error with a loc */
	};

	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		pbuf_init(&b);
		pbuf_put_u32(&b, 1);
		pbuf_put_u32(&b, (uint32_t)rows[i].status);
		pbuf_put_u32(&b, rows[i].flags);
		pbuf_put_u32(&b, rows[i].region);
		pbuf_put_bytes(&b, (uint8_t[36]){ 0 }, 36);
		reader_v2(&r, &b, b.len);
		cr_assert_eq(proto_get_results(&r, out, 1, &n), rows[i].rc,
		    "row %zu", i);
		pbuf_fini(&b);
	}
}

Test(proto_msg, error_results_are_encoded_with_a_zero_loc)
{
	struct proto_result res = { CXLP_E_PINNED, 0, { 1, 2, 3, 4, 5, 6 } },
			    out;
	uint32_t n;
	struct preader r;
	struct pbuf b;

	pbuf_init(&b);
	proto_put_results(&b, 1, &res);
	preader_init(&r, b.data, b.len);
	cr_assert_eq(proto_get_results(&r, &out, 1, &n), 0);
	cr_assert_eq(out.status, CXLP_E_PINNED);
	cr_assert_eq(out.loc.region, 0);
	cr_assert_eq(out.loc.len, 0);
	pbuf_fini(&b);
}

/* ---- random and mutated frames ---- */

static void
mutate(struct pbuf *b)
{
	switch (rnd_below(5)) {
	case 0: /* flip a few bytes */
		for (uint32_t i = 1 + rnd_below(4); i > 0; i--) {
			b->data[rnd_below((uint32_t)b->len)] ^=
			    (uint8_t)(1 + rnd_below(255));
		}
		break;
	case 1: /* cut */
		b->len = rnd_below((uint32_t)b->len + 1);
		break;
	case 2: /* append garbage */
		pbuf_put_bytes(b, keybytes + rnd_below(1000),
		    1 + rnd_below(64));
		break;
	case 3: /* overwrite a length-sized field with an extreme value */
		if (b->len >= PROTO_REQ_HDR_LEN + 6) {
			size_t at = PROTO_REP_HDR_LEN + rnd_below(
			    (uint32_t)(b->len - PROTO_REP_HDR_LEN - 3));

			memset(b->data + at, rnd_below(2) ? 0xff : 0, 2);
		}
		break;
	default: /* all random after a valid magic and version */
		rnd_fill(b->data + 6, b->len - 6);
		break;
	}
}

Test(proto_msg, mutated_frames_decode_safely_and_canonically)
{
	for (int i = 0; i < 20000; i++) {
		const struct msg_type *t = &msg_types[rnd_below(MSG_NTYPES)];
		uint8_t *copy;
		struct pbuf b;

		fx_version = PROTO_VERSION_MIN + (uint16_t)rnd_below(2);
		pbuf_init(&b);
		t->build(&b);
		mutate(&b);
		copy = malloc(b.len + 1);
		cr_assert_not_null(copy);
		memcpy(copy, b.data, b.len);
		cr_assert_eq(proto_check_frame(copy, b.len), 0,
		    "iteration %d (%s): decoded frame re-encodes differently",
		    i, t->name);
		free(copy);
		pbuf_fini(&b);
	}
}

Test(proto_msg, random_bytes_into_every_body_decoder_never_crash)
{
	uint8_t buf[512];

	for (int i = 0; i < 5000; i++) {
		size_t len = rnd_below(sizeof(buf));
		uint8_t *f = malloc(len + 1);

		cr_assert_not_null(f);
		rnd_fill(buf, len);
		if (len >= 8 && rnd_below(2)) {
			buf[4 + rnd_below(4)] = 0; /* keep counts small */
		}
		memcpy(f, buf, len);
		for (size_t t = 0; t < MSG_NTYPES; t++) {
			/* Skip the header: feed the bytes as a body. */
			struct pbuf b;

			fx_version = PROTO_VERSION_MIN + (uint16_t)(i % 2);
			pbuf_init(&b);
			msg_types[t].build(&b);
			b.len = msg_types[t].request ?
			    proto_req_hdr_len(fx_version) :
			    proto_rep_hdr_len(fx_version);
			if (!msg_types[t].request) {
				memset(b.data + 16, 0, 4); /* status 0 */
			}
			pbuf_put_bytes(&b, f, len);
			(void)decode_exact(&msg_types[t], b.data, b.len);
			pbuf_fini(&b);
		}
		cr_assert_eq(proto_check_frame(f, len), 0);
		free(f);
	}
}
