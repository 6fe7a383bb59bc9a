// SPDX-License-Identifier: GPL-2.0
/*
 * A program may use any name the library does not declare: names the
 * library uses inside must neither replace the program's (or be replaced
 * by them, as a dynamic library's exported function would be) nor clash
 * with them at link time. This program defines the names the library's
 * event loop used to export (idmap_*), and, built against the shared
 * library (SYMBOLS_DYNAMIC: symbols_dynamic_test), internal names of the
 * library as well; async waits, locks and single-flight must still work,
 * and none of these functions may ever be called by the library.
 */
#define _GNU_SOURCE
#include <stdbool.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

static int foreign_calls;	/* calls of the functions below */

/* The names the event loop's id map had. */
int idmap_reserve(void *m);
void idmap_insert(void *m, const void *e);
bool idmap_remove(void *m, uint64_t id, void *out);
bool idmap_contains(const void *m, uint64_t id);
bool idmap_pop(void *m, void *out);
void idmap_free(void *m);

int idmap_reserve(void *m)
{
	(void)m;
	foreign_calls++;
	return -ENOMEM;
}

void idmap_insert(void *m, const void *e)
{
	(void)m;
	(void)e;
	foreign_calls++;
}

bool idmap_remove(void *m, uint64_t id, void *out)
{
	(void)m;
	(void)id;
	(void)out;
	foreign_calls++;
	return false;
}

bool idmap_contains(const void *m, uint64_t id)
{
	(void)m;
	(void)id;
	foreign_calls++;
	return false;
}

bool idmap_pop(void *m, void *out)
{
	(void)m;
	(void)out;
	foreign_calls++;
	return false;
}

void idmap_free(void *m)
{
	(void)m;
	foreign_calls++;
}

#ifdef SYMBOLS_DYNAMIC
/*
 * The library's internal names: reserved for it, so a static link would
 * clash; against the shared library they must simply be the program's.
 */
int syncmem__ioctl(int fd, unsigned long req, void *arg);
int syncmem__device_open(void);
uint32_t syncmem__tid_slow(void);
int syncmem__guard_arm(void *r, uint32_t *word, uint32_t expected, uint32_t value,
		       uint64_t *id);

int syncmem__ioctl(int fd, unsigned long req, void *arg)
{
	(void)fd;
	(void)req;
	(void)arg;
	foreign_calls++;
	return -ENOSYS;
}

int syncmem__device_open(void)
{
	foreign_calls++;
	return -ENOSYS;
}

uint32_t syncmem__tid_slow(void)
{
	foreign_calls++;
	return 1;
}

int syncmem__guard_arm(void *r, uint32_t *word, uint32_t expected, uint32_t value,
		       uint64_t *id)
{
	(void)r;
	(void)word;
	(void)expected;
	(void)value;
	(void)id;
	foreign_calls++;
	return -ENOSYS;
}
#endif

struct shared {
	uint32_t word;
	struct syncmem_lock lock;
	uint8_t rest[] __attribute__((aligned(64)));
};

static void note(void *arg, int result)
{
	*(int *)arg = result;
}

static int compute(void *arg, void *out, size_t cap, size_t *len)
{
	(void)arg;
	if (cap < 3)
		return -EMSGSIZE;
	memcpy(out, "yes", 3);
	*len = 3;
	return 0;
}

TEST(the_library_uses_its_own_functions)
{
	size_t pool_len = syncmem_pool_footprint(64, 4), table_len = syncmem_flight_footprint(4);
	struct syncmem_region *r;
	struct syncmem_loop *loop;
	struct syncmem_pool *pool;
	struct syncmem_flight *f;
	struct shared *sh;
	int got = -1, locked = -1;
	char out[8];

	ASSERT_EQ(0, syncmem_open(NULL, 65536, 0, 0, &r));
	sh = syncmem_base(r);
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	/* An async wait: queued in the loop's id map, completed by a notify. */
	ASSERT_EQ(SYNCMEM_PENDING, syncmem_wait_async32(loop, r, &sh->word, 0, SYNCMEM_FOREVER,
							note, &got, NULL));
	EXPECT_EQ(1, syncmem_loop_pending(loop));
	EXPECT_EQ(1, syncmem_notify(r, &sh->word, 1));
	EXPECT_EQ(0, syncmem_loop_run(loop));
	EXPECT_EQ(SYNCMEM_OK, got);
	/* A lock, blocking and async (the thread id, the loop's post). */
	syncmem_lock_init(&sh->lock, 0);
	EXPECT_EQ(0, syncmem_lock(r, &sh->lock));
	EXPECT_EQ(0, syncmem_unlock(r, &sh->lock));
	EXPECT_EQ(0, syncmem_lock_async(loop, r, &sh->lock, note, &locked));
	EXPECT_EQ(0, syncmem_loop_run(loop));
	EXPECT_EQ(0, locked);
	EXPECT_EQ(0, syncmem_unlock(r, &sh->lock));
	/* A flight: its leader arms a death guard through the device. */
	ASSERT_EQ(0, syncmem_pool_init(sh->rest, pool_len, 64, 4, &pool));
	ASSERT_EQ(0, syncmem_flight_init(r, sh->rest + pool_len, table_len, 4, pool, &f));
	EXPECT_EQ(3, syncmem_flight_do(r, f, "q", 1, compute, NULL, out, sizeof(out)));
	EXPECT_EQ(0, memcmp(out, "yes", 3));
	syncmem_loop_free(loop);
	syncmem_pool_detach(pool);
	syncmem_close(r);
	EXPECT_EQ(0, foreign_calls);
}

TEST_HARNESS_MAIN
