/* SPDX-License-Identifier: MIT */
/*
 * No 16-byte record makes a decoder allocate more than a few elements: for
 * the top-level types the servers decode (COMPOUND, CB_COMPOUND, every
 * NFSv3 result list, MOUNT and rpcbind lists, flexfiles layouts), feed every
 * 16-byte input built from hostile words and check what the arena handed
 * out.  Array counts are checked against the bytes that remain before any
 * allocation, so a count of 0xffffffff fails at once.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "flexfiles.h"
#include "mount_prot.h"
#include "nfs3_prot.h"
#include "nfs4_prot.h"
#include "rpcb_prot.h"
#include "tests/check.h"

/* A wrapper per type, so no decoder is called through a cast pointer. */
#define W(name)                                                        \
	static int dec_##name(struct xdr_dec *d, void *v)              \
	{                                                              \
		return xdr_dec_##name(d, v);                           \
	}
W(COMPOUND4args) W(COMPOUND4res) W(CB_COMPOUND4args) W(CB_COMPOUND4res)
W(READDIR4res) W(fattr4) W(bitmap4) W(GETDEVICELIST4res) W(LAYOUTGET4res)
W(READDIR3res) W(READDIRPLUS3res) W(mountres3) W(exports) W(mountlist)
W(rpcblist_ptr) W(rpcb_entry_list_ptr) W(ff_layout4) W(ff_device_addr4)
W(ff_layoutreturn4)

#define T(name) { #name, dec_##name, sizeof(name) }
static const struct {
	const char *name;
	xdr_dec_fn dec;
	size_t size;
} types[] = {
	T(COMPOUND4args), T(COMPOUND4res), T(CB_COMPOUND4args), T(CB_COMPOUND4res),
	T(READDIR4res), T(fattr4), T(bitmap4), T(GETDEVICELIST4res), T(LAYOUTGET4res),
	T(READDIR3res), T(READDIRPLUS3res), T(mountres3), T(exports), T(mountlist),
	T(rpcblist_ptr), T(rpcb_entry_list_ptr), T(ff_layout4), T(ff_device_addr4),
	T(ff_layoutreturn4),
};

int main(void)
{
	static const uint32_t words[] = { 0,          1,          3,         0x3fffffffu,
					  0x7fffffffu, 0x80000000u, 0xffffffffu };
	const unsigned nw = sizeof(words) / sizeof(words[0]);
	size_t worst = 0;
	const char *worst_type = "";
	unsigned long cases = 0;
	for (unsigned t = 0; t < sizeof(types) / sizeof(types[0]); t++) {
		for (unsigned k = 0; k < nw * nw * nw * nw; k++) {
			uint8_t in[16];
			unsigned x = k;
			for (int i = 0; i < 4; i++, x /= nw)
				xdr_put32(in + 4 * i, words[x % nw]);
			struct xdr_arena a;
			xdr_arena_init(&a, NULL, 0, 256u << 20);
			void *v = calloc(1, types[t].size);
			struct xdr_dec d;
			xdr_dec_init(&d, in, sizeof(in), &a);
			types[t].dec(&d, v);
			CHECK(d.p >= in && d.p <= in + sizeof(in));
			if (a.total > worst) {
				worst = a.total;
				worst_type = types[t].name;
			}
			/* a few small elements at most, never a count's worth */
			CHECK(a.total <= 1024);
			xdr_arena_release(&a);
			free(v);
			cases++;
		}
	}
	/* the classic: a COMPOUND claiming 2^32-1 operations */
	uint8_t in[16];
	xdr_put32(in, 0);           /* tag: empty */
	xdr_put32(in + 4, 1);       /* minorversion */
	xdr_put32(in + 8, 0xffffffffu); /* argarray count */
	xdr_put32(in + 12, 53);     /* OP_SEQUENCE */
	struct xdr_arena a;
	xdr_arena_init(&a, NULL, 0, 256u << 20);
	COMPOUND4args args;
	struct xdr_dec d;
	xdr_dec_init(&d, in, sizeof(in), &a);
	CHECK(xdr_dec_COMPOUND4args(&d, &args) < 0);
	CHECK_EQ(a.total, 0);
	xdr_arena_release(&a);
	printf("xdr-hostile-16byte: %lu inputs, most allocated %zu bytes (%s): ok\n", cases, worst,
	       worst_type);
	return 0;
}
