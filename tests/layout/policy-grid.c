/* SPDX-License-Identifier: MIT */
/*
 * Layout policies (layout/policy.h), with no server: the stored 32-bit
 * form round-trips and refuses what is not a policy; the text form parses
 * and refuses bad shapes with a reason; the grid (segment bounds, the
 * piece a data server holds, RFC 8435 §5.1 stripe slots from the file
 * offset); placement: consecutive segments round-robin over the file's
 * set, mirrors on distinct data servers, a data server that is not usable
 * replaced by the next of the set, then by one outside it, -EAGAIN when
 * too few exist; the set weighted by free space.
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "layout/policy.h"
#include "tests/check.h"

static uint64_t rng_state = 0x1234567;

static uint64_t rng(void *arg)
{
	(void)arg;
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static struct layout_policy parse_ok(const char *s)
{
	struct layout_policy p;
	char why[200] = "";
	int rc = layout_policy_parse(s, &p, why, sizeof(why));
	if (rc)
		fprintf(stderr, "%s: %s\n", s, why);
	CHECK_EQ(rc, 0);
	/* the stored form carries all of it */
	struct layout_policy q;
	CHECK_EQ(layout_policy_decode(layout_policy_encode(&p), &q), 0);
	CHECK(!memcmp(&p, &q, sizeof(p)));
	/* and so does the text */
	char buf[128];
	layout_policy_format(&p, buf, sizeof(buf));
	CHECK_EQ(layout_policy_parse(buf, &q, why, sizeof(why)), 0);
	CHECK(!memcmp(&p, &q, sizeof(p)));
	return p;
}

static void parse_bad(const char *s, const char *why_has)
{
	struct layout_policy p;
	char why[200] = "";
	CHECK_EQ(layout_policy_parse(s, &p, why, sizeof(why)), -EINVAL);
	if (!strstr(why, why_has))
		fprintf(stderr, "%s: \"%s\" lacks \"%s\"\n", s, why, why_has);
	CHECK(strstr(why, why_has));
}

static void t_forms(void)
{
	struct layout_policy d;
	layout_policy_default(&d);
	CHECK_EQ(d.mode, LAYOUT_WHOLE);
	CHECK_EQ(d.mirrors, 1);
	CHECK_EQ(layout_policy_check(&d, NULL, 0), 0);

	struct layout_policy p = parse_ok("whole");
	CHECK(!memcmp(&p, &d, sizeof(p)));
	p = parse_ok("whole,mirrors=3");
	CHECK_EQ(p.mirrors, 3);
	p = parse_ok("segments");
	CHECK_EQ(p.mode, LAYOUT_SEGMENTS);
	CHECK_EQ(p.seg_shift, 24); /* 16 MiB by default */
	p = parse_ok("segments,segment_size=64M,width=8,mirrors=2");
	CHECK(p.seg_shift == 26 && p.width == 8 && p.mirrors == 2);
	p = parse_ok("striped,stripes=4,stripe_unit=64k");
	CHECK(p.mode == LAYOUT_STRIPED && p.stripes == 4 && p.unit_shift == 16 && !p.seg_shift);
	p = parse_ok("striped,stripes=2,stripe_unit=1M,segment_size=1G,mirrors=2");
	CHECK_EQ(layout_seg_width(&p), 4);

	/* erasure coding: a segment grid with k and m */
	p = parse_ok("ec");
	CHECK(p.mode == LAYOUT_SEGMENTS && p.ec_k == 4 && p.ec_m == 2 && p.seg_shift == 24);
	CHECK(layout_is_ec(&p));
	p = parse_ok("ec,k=8,m=3,segment_size=1M,mirrors=1");
	CHECK(p.ec_k == 8 && p.ec_m == 3 && p.seg_shift == 20 && p.mirrors == 1);
	struct layout_policy c = parse_ok("ec:k=8:m=3:segment_size=1M");
	CHECK(!memcmp(&p, &c, sizeof(p)));
	CHECK_EQ(layout_ec_stripe(&p, 0), 0);
	CHECK_EQ(layout_ec_stripe(&p, (8ull << 20) - 1), 0);
	CHECK_EQ(layout_ec_stripe(&p, 8ull << 20), 1);
	CHECK(!layout_is_ec(&d));
	parse_bad("ec,k=1", "k must be");
	parse_bad("ec,m=0", "m must be");
	parse_bad("ec,m=5", "m must be");
	parse_bad("ec,k=12,m=4", "k + m");
	parse_bad("ec,k=4,m=2,width=5", "width 5");
	parse_bad("segments,k=4", "unknown layout option");
	/* mirrored while hot: the set holds k + m servers and the mirrors */
	CHECK_EQ(parse_ok("ec,k=4,m=2,mirrors=2").mirrors, 2);
	CHECK_EQ(parse_ok("ec,k=2,m=1,mirrors=3,width=3").mirrors, 3);
	parse_bad("ec,k=2,m=1,mirrors=4,width=3", "width 3 is less than mirrors");

	parse_bad("raid5", "whole, segments, striped or ec");
	parse_bad("segments,segment_size=3M", "segment_size");
	parse_bad("segments,segment_size=512k", "segment size");
	parse_bad("segments,colour=blue", "unknown layout option");
	parse_bad("segments,width", "name=value");
	parse_bad("segments,mirrors=0", "mirrors");
	parse_bad("whole,width=3", "whole-file");
	parse_bad("striped", "stripes");
	parse_bad("striped,stripes=2,stripe_unit=1M,segment_size=1M,mirrors=9", "mirrors");
	parse_bad("segments,width=2,mirrors=3", "width 2");
	parse_bad("striped,stripes=8,mirrors=2", "at most 15");

	/* the stored form: bit 31 marks a policy, reserved bits are zero */
	CHECK_EQ(layout_policy_decode(0, &p), -EINVAL);
	CHECK_EQ(layout_policy_decode(layout_policy_encode(&d) | 1u << 24, &p), -EINVAL);
	CHECK_EQ(layout_policy_decode(layout_policy_encode(&d) | 1u << 28, &p), -EINVAL); /* ec on whole */
	CHECK_EQ(layout_policy_decode(layout_policy_encode(&d) & ~(1u << 31), &p), -EINVAL);
	CHECK_EQ(layout_policy_decode(1u << 31, &p), -EINVAL); /* mode 0 */
}

static void t_grid(void)
{
	struct layout_policy p = parse_ok("segments,segment_size=16M");
	uint64_t s, l;
	CHECK_EQ(layout_seg_index(&p, 0), 0);
	CHECK_EQ(layout_seg_index(&p, (16u << 20) - 1), 0);
	CHECK_EQ(layout_seg_index(&p, 16u << 20), 1);
	layout_seg_bounds(&p, 3, &s, &l);
	CHECK(s == 48ull << 20 && l == 16ull << 20);
	CHECK_EQ(layout_piece_end(&p, 5), 16ull << 20);
	CHECK_EQ(layout_piece_end(&p, 16ull << 20), 32ull << 20);
	CHECK_EQ(layout_piece_end(&p, UINT64_MAX - 5), UINT64_MAX);
	CHECK_EQ(layout_ds_slot(&p, 1, 12345), 1);

	struct layout_policy w = parse_ok("whole,mirrors=2");
	CHECK_EQ(layout_seg_index(&w, 1ull << 40), 0);
	layout_seg_bounds(&w, 0, &s, &l);
	CHECK(s == 0 && l == LAYOUT_ALL);
	CHECK_EQ(layout_piece_end(&w, 77), UINT64_MAX);

	/* RFC 8435 §5.1: the stripe from the file offset; pieces end at units */
	struct layout_policy st = parse_ok("striped,stripes=4,stripe_unit=1M,mirrors=2");
	CHECK_EQ(layout_ds_slot(&st, 0, 0), 0);
	CHECK_EQ(layout_ds_slot(&st, 0, 5u << 20), 1);
	CHECK_EQ(layout_ds_slot(&st, 1, 3u << 20), 7);
	CHECK_EQ(layout_piece_end(&st, (1u << 20) + 7), 2u << 20);
	struct layout_policy sg = parse_ok("striped,stripes=2,stripe_unit=4M,segment_size=16M");
	CHECK_EQ(layout_piece_end(&sg, 13u << 20), 16u << 20);
	CHECK_EQ(layout_piece_end(&sg, 17u << 20), 20u << 20);
}

static bool has(const uint32_t *v, unsigned n, uint32_t id)
{
	for (unsigned i = 0; i < n; i++)
		if (v[i] == id)
			return true;
	return false;
}

static void t_place(void)
{
	struct layout_cand u[4] = {{1, 100}, {2, 100}, {3, 100}, {4, 100}};
	uint32_t set[4] = {3, 1, 4, 2}, out[16];

	/* consecutive segments round-robin over the set */
	struct layout_policy p = parse_ok("segments");
	for (uint64_t n = 0; n < 9; n++) {
		CHECK_EQ(layout_seg_place(&p, set, 4, n, u, 4, out), 0);
		CHECK_EQ(out[0], set[n % 4]);
	}
	/* mirrors: distinct, the second the next of the set */
	struct layout_policy m = parse_ok("segments,mirrors=2");
	for (uint64_t n = 0; n < 8; n++) {
		CHECK_EQ(layout_seg_place(&m, set, 4, n, u, 4, out), 0);
		CHECK(out[0] == set[n % 4] && out[1] == set[(n + 1) % 4]);
	}
	struct layout_policy m3 = parse_ok("whole,mirrors=3");
	uint32_t two[2] = {1, 2};
	CHECK_EQ(layout_seg_place(&m3, two, 2, 0, u, 4, out), 0);
	CHECK(out[0] == 1 && out[1] == 2 && (out[2] == 3 || out[2] == 4));
	/* too few distinct usable data servers */
	CHECK_EQ(layout_seg_place(&m3, two, 2, 0, u, 2, out), -EAGAIN);

	/* data server 4 unusable: its turn goes to the next of the set */
	struct layout_cand u3[3] = {{1, 100}, {2, 100}, {3, 100}};
	CHECK_EQ(layout_seg_place(&p, set, 4, 2, u3, 3, out), 0);
	CHECK_EQ(out[0], 2);
	CHECK_EQ(layout_seg_place(&m, set, 4, 1, u3, 3, out), 0);
	CHECK(out[0] == 1 && out[1] == 2);
	/* none of the set usable: the heaviest other */
	struct layout_cand other[2] = {{7, 10}, {8, 50}};
	CHECK_EQ(layout_seg_place(&p, set, 4, 0, other, 2, out), 0);
	CHECK_EQ(out[0], 8);

	/* striped: mirror by mirror, stripes distinct */
	struct layout_cand u8[8];
	uint32_t set8[8];
	for (uint32_t i = 0; i < 8; i++) {
		u8[i] = (struct layout_cand){i + 1, 1000};
		set8[i] = i + 1;
	}
	struct layout_policy st = parse_ok("striped,stripes=3,stripe_unit=1M,mirrors=2");
	CHECK_EQ(layout_seg_place(&st, set8, 6, 0, u8, 8, out), 0);
	for (unsigned j = 0; j < 6; j++)
		CHECK_EQ(out[j], set8[j]);

	/* the set: distinct, and size as asked */
	struct layout_policy w3 = parse_ok("segments,width=3");
	CHECK_EQ(layout_set_size(&w3, 8), 3);
	CHECK_EQ(layout_set_size(&p, 20), LAYOUT_SET_MAX); /* width 0: all, capped */
	CHECK_EQ(layout_set_size(&p, 2), 2);
	CHECK_EQ(layout_set_size(&m3, 2), 0); /* three mirrors need three */
	CHECK_EQ(layout_set_size(&m3, 9), 3);
	uint32_t chosen[8];
	CHECK_EQ(layout_set_choose(u8, 8, 5, rng, NULL, chosen), 5);
	for (unsigned i = 0; i < 5; i++) {
		CHECK(!has(chosen, i, chosen[i]));
		CHECK(chosen[i] >= 1 && chosen[i] <= 8);
	}
	CHECK_EQ(layout_set_choose(u8, 3, 5, rng, NULL, chosen), 3);

	/* erasure coding: the set holds every chunk of a stripe */
	struct layout_policy ec = parse_ok("ec,k=4,m=2,segment_size=1M");
	CHECK_EQ(layout_set_size(&ec, 5), 0);
	CHECK_EQ(layout_set_size(&ec, 6), 6);
	CHECK_EQ(layout_set_size(&ec, 8), 8);
	/* stripe s's data segments and parity are k + m distinct servers */
	for (uint64_t s = 0; s < 12; s++) {
		uint32_t data[4], par[2];
		for (unsigned j = 0; j < 4; j++) {
			CHECK_EQ(layout_seg_place(&ec, set8, 7, s * 4 + j, u8, 8, out), 0);
			data[j] = out[0];
			CHECK(!has(data, j, data[j]));
		}
		CHECK_EQ(layout_ec_place(&ec, set8, 7, s, data, 4, u8, 8, par), 0);
		CHECK_EQ(par[0], set8[(s * 4 + 4) % 7]);
		for (unsigned r = 0; r < 2; r++) {
			CHECK(!has(data, 4, par[r]));
			CHECK(!has(par, r, par[r]));
		}
	}
	/* a parity turn on a server of the stripe, or unusable, moves on */
	uint32_t d4[4] = {1, 2, 3, 4}, par[2];
	CHECK_EQ(layout_ec_place(&ec, set8, 6, 0, d4, 4, u8, 8, par), 0);
	CHECK(par[0] == 5 && par[1] == 6);
	struct layout_cand no5[7];
	for (unsigned i = 0, j = 0; i < 8; i++)
		if (u8[i].id != 5)
			no5[j++] = u8[i];
	CHECK_EQ(layout_ec_place(&ec, set8, 6, 0, d4, 4, no5, 7, par), 0);
	CHECK(par[0] == 6 && (par[1] == 7 || par[1] == 8));
	/* too few servers outside the stripe */
	CHECK_EQ(layout_ec_place(&ec, set8, 6, 0, d4, 4, u8, 5, par), -EAGAIN);

	/* weighted by free space: a data server with 9 times the room of
	 * each other comes first about 9 times in 12 */
	struct layout_cand wt[4] = {
	    {1, 9ull << 30}, {2, 1ull << 30}, {3, 1ull << 30}, {4, 1ull << 30}};
	unsigned first = 0;
	for (int i = 0; i < 4000; i++) {
		CHECK_EQ(layout_set_choose(wt, 4, 2, rng, NULL, chosen), 2);
		CHECK(chosen[0] != chosen[1]);
		first += chosen[0] == 1;
	}
	CHECK(first > 2700 && first < 3300);
}

int main(void)
{
	t_forms();
	t_grid();
	t_place();
	return 0;
}
