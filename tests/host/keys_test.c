// SPDX-License-Identifier: GPL-2.0
/*
 * What of keyed locks and single-flight needs no kernel, on the host: keys
 * built from parts, and building and attaching key tables in plain shared
 * memory (geometry, the create/attach protocol, foreign memory). Built
 * plain, under ASan+UBSan and under TSan.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

static void *shared_mem(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

TEST(keys_from_parts_are_length_prefixed)
{
	uint8_t k[SYNCMEM_KEY_MAX], big[SYNCMEM_KEY_MAX];
	uint64_t id = 0x1122334455667788ull;
	struct syncmem_key_part two[] = { SYNCMEM_KEY_STR("user"), SYNCMEM_KEY_VAL(id) };
	struct syncmem_key_part empty[] = { { NULL, 0 }, SYNCMEM_KEY_STR("x") };
	struct syncmem_key_part bad[] = { { NULL, 3 } };
	struct syncmem_key_part fits[] = { { big, SYNCMEM_KEY_MAX - 2 } };
	struct syncmem_key_part over[] = { { big, SYNCMEM_KEY_MAX - 1 } };

	ASSERT_EQ(2 + 4 + 2 + 8, syncmem_key_build(k, sizeof(k), two, 2));
	EXPECT_EQ(4, k[0]);
	EXPECT_EQ(0, k[1]);
	EXPECT_EQ(0, memcmp(k + 2, "user", 4));
	EXPECT_EQ(8, k[6]);
	EXPECT_EQ(0, memcmp(k + 8, &id, 8));
	/* An empty part still counts: ("", "x") differs from ("x"). */
	EXPECT_EQ(2 + 2 + 1, syncmem_key_build(k, sizeof(k), empty, 2));
	EXPECT_EQ(0, syncmem_key_build(k, sizeof(k), NULL, 0));
	EXPECT_EQ(-EINVAL, syncmem_key_build(k, sizeof(k), bad, 1));
	EXPECT_EQ(-EINVAL, syncmem_key_build(k, sizeof(k), NULL, 1));
	memset(big, 7, sizeof(big));
	EXPECT_EQ(SYNCMEM_KEY_MAX, syncmem_key_build(k, sizeof(k), fits, 1));
	EXPECT_EQ(-E2BIG, syncmem_key_build(k, sizeof(k), over, 1));
	/* The buffer's size bounds it too, and so does SYNCMEM_KEY_MAX. */
	EXPECT_EQ(-E2BIG, syncmem_key_build(k, 10, two, 2));
}

TEST(key_table_geometry_and_protocol)
{
	size_t len = syncmem_keyed_footprint(10);
	struct syncmem_keyed *k, *k2;
	struct syncmem_flight *f;
	uint8_t *mem;

	/*
	 * 128-byte header, 16 buckets of 8 bytes, 16 chain locks of 64 bytes,
	 * 10 entries of 192.
	 */
	EXPECT_EQ(128 + 128 + 16 * 64 + 10 * 192, len);
	EXPECT_EQ(syncmem_keyed_footprint(10), syncmem_flight_footprint(10));
	EXPECT_EQ(0, syncmem_keyed_footprint(0));
	EXPECT_EQ(0, syncmem_keyed_footprint((1u << 24) + 1));
	mem = shared_mem(2 * len + 4096);
	ASSERT_NE(NULL, mem);

	EXPECT_EQ(-EPROTO, syncmem_keyed_attach(mem, len, &k));	/* zeroed */
	EXPECT_EQ(-EINVAL, syncmem_keyed_init(mem + 8, len, 10, &k));
	EXPECT_EQ(-EINVAL, syncmem_keyed_init(mem, len - 1, 10, &k));
	EXPECT_EQ(-EINVAL, syncmem_keyed_init(mem, len, 0, &k));
	EXPECT_EQ(-EINVAL, syncmem_keyed_init(mem, len, 10, NULL));
	ASSERT_EQ(0, syncmem_keyed_init(mem, len, 10, &k));
	EXPECT_EQ(0, syncmem_keyed_in_use(k));
	EXPECT_EQ(-EEXIST, syncmem_keyed_init(mem, len, 10, &k2));
	EXPECT_EQ(0, syncmem_keyed_attach(mem, len, &k2));
	EXPECT_EQ(k, k2);
	EXPECT_EQ(-EINVAL, syncmem_keyed_attach(mem, len - 1, &k2));
	EXPECT_EQ(-EINVAL, syncmem_keyed_attach(mem + 64, 64, &k2));
	/* Damaged geometry, or another kind of table: -EPROTO. */
	k->t.nbuckets = 8;
	EXPECT_EQ(-EPROTO, syncmem_keyed_attach(mem, len, &k2));
	k->t.nbuckets = 16;
	k->t.magic = SYNCMEM_FLIGHT_MAGIC;
	EXPECT_EQ(-EPROTO, syncmem_keyed_attach(mem, len, &k2));
	k->t.magic = SYNCMEM_KEYED_MAGIC;
	/* A flight table needs a region for its results: no region, -EINVAL. */
	EXPECT_EQ(-EINVAL, syncmem_flight_attach(NULL, mem, len, &f));
	/* A foreign state word. */
	memset(mem + len + 64, 0xab, 64);
	EXPECT_EQ(-EPROTO, syncmem_keyed_attach(mem + len + 64, len, &k2));
	munmap(mem, 2 * len + 4096);
}

TEST_HARNESS_MAIN
