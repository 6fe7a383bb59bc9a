// SPDX-License-Identifier: GPL-2.0
/*
 * The lock-free block allocator on the host: memory shared with fork
 * (MAP_SHARED | MAP_ANONYMOUS or a memfd), and threads. Built plain, under
 * ASan+UBSan and under TSan.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "pool_common.h"
#include "syncmem_test.h"

static void *shared_mem(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

TEST(geometry)
{
	EXPECT_EQ(576 + 64 + 64, syncmem_pool_footprint(8, 1));
	EXPECT_EQ(576 + 64 + 64, syncmem_pool_footprint(1, 1));
	EXPECT_EQ(576 + 64 + 2 * 128, syncmem_pool_footprint(65, 2));
	EXPECT_EQ(576 + 64 + 4 * (1u << 20), syncmem_pool_footprint(1u << 20, 4));
	EXPECT_EQ(0, syncmem_pool_footprint(0, 1));
	EXPECT_EQ(0, syncmem_pool_footprint(8, 0));
	EXPECT_EQ(0, syncmem_pool_footprint(SYNCMEM_POOL_MAX_BLOCK + 1, 1));
	EXPECT_EQ(0, syncmem_pool_footprint(8, (1u << 31) + 1));
	/* Offsets are 32-bit: a pool past 4 GiB cannot exist. */
	EXPECT_EQ(0, syncmem_pool_footprint(64, 1u << 27));
	EXPECT_NE(0, syncmem_pool_footprint(64, 1u << 25));
}

TEST(init_and_attach_errors)
{
	size_t len = syncmem_pool_footprint(64, 16);
	char *mem = shared_mem(2 * len + 64);
	struct syncmem_pool_header *h = (void *)mem;
	struct syncmem_pool *p, *q;
	int64_t t0;

	ASSERT_NE(NULL, mem);
	EXPECT_EQ(-EINVAL, syncmem_pool_init(mem + 8, len, 64, 16, &p));
	EXPECT_EQ(NULL, p);
	EXPECT_EQ(-EINVAL, syncmem_pool_init(mem, len - 1, 64, 16, &p));
	EXPECT_EQ(-EINVAL, syncmem_pool_init(mem, len, 0, 16, &p));
	EXPECT_EQ(-EINVAL, syncmem_pool_init(mem, len, 64, 0, &p));
	EXPECT_EQ(-E2BIG, syncmem_pool_init(mem, len, 64, 1u << 27, &p));
	EXPECT_EQ(-EINVAL, syncmem_pool_init(mem, len, 64, 16, NULL));

	/* Zeroed memory is not a pool, and says so at once. */
	t0 = (int64_t)(churn_now() * 1e9);
	EXPECT_EQ(-EPROTO, syncmem_pool_attach(mem, len, &q));
	EXPECT_GT(100000000, (int64_t)(churn_now() * 1e9) - t0);
	EXPECT_EQ(-EINVAL, syncmem_pool_attach(mem + 8, len, &q));
	EXPECT_EQ(-EINVAL, syncmem_pool_attach(mem, 10, &q));

	ASSERT_EQ(0, syncmem_pool_init(mem, len, 64, 16, &p));
	/* The handle is private; it maps offsets onto the memory it was given. */
	EXPECT_NE((void *)mem, p);
	EXPECT_EQ(mem + 640, syncmem_pool_ptr(p, 640));
	EXPECT_EQ(-EEXIST, syncmem_pool_init(mem, len, 64, 16, &q));
	EXPECT_EQ(NULL, q);
	EXPECT_EQ(0, syncmem_pool_attach(mem, len, &q));
	EXPECT_NE(p, q);
	EXPECT_EQ(syncmem_pool_ptr(p, 640), syncmem_pool_ptr(q, 640));
	syncmem_pool_detach(q);
	EXPECT_EQ(-EINVAL, syncmem_pool_attach(mem, len - 64, &q));
	EXPECT_EQ(16, syncmem_pool_free_count(p));
	EXPECT_EQ(SYNCMEM_POOL_MAGIC, h->magic);
	EXPECT_EQ(64, h->block_size);
	/* 576 bytes of header, then one 8-byte word per block, 64-aligned. */
	EXPECT_EQ(704, h->blocks_off);

	/* Foreign memory: a wrong magic, a damaged geometry. */
	h->magic ^= 1;
	EXPECT_EQ(-EPROTO, syncmem_pool_attach(mem, len, &q));
	h->magic ^= 1;
	h->nblocks++;
	EXPECT_EQ(-EPROTO, syncmem_pool_attach(mem, len, &q));
	h->nblocks--;
	memset(mem + len, 0xa5, len);
	EXPECT_EQ(-EPROTO, syncmem_pool_attach(mem + len + 64 - len % 64, len, &q));
	syncmem_pool_detach(p);
	syncmem_pool_detach(NULL);
	munmap(mem, 2 * len + 64);
}

static void *finish_init_later(void *arg)
{
	struct syncmem_pool_header *h = arg;

	usleep(200000);
	__atomic_store_n(&h->state, 0x52454459u, __ATOMIC_RELEASE);	/* ready */
	return NULL;
}

/*
 * An attacher that arrives while the creator is still building waits for it.
 * The creator's last step is storing "ready" with release; model a slow
 * creator by taking a finished pool back to "initialising" and finishing it
 * 200 ms later.
 */
TEST(attach_waits_for_a_slow_creator)
{
	size_t len = syncmem_pool_footprint(64, 4);
	void *mem = shared_mem(len);
	struct syncmem_pool_header *h = mem;
	struct syncmem_pool *p, *q;
	pthread_t t;
	double t0;

	ASSERT_EQ(0, syncmem_pool_init(mem, len, 64, 4, &p));
	__atomic_store_n(&h->state, 0x494e4954u, __ATOMIC_RELAXED);	/* initialising */
	ASSERT_EQ(0, pthread_create(&t, NULL, finish_init_later, h));
	t0 = churn_now();
	EXPECT_EQ(0, syncmem_pool_attach(mem, len, &q));
	EXPECT_LE(0.19, churn_now() - t0);
	pthread_join(t, NULL);
	EXPECT_EQ(4, syncmem_pool_free_count(q));
	syncmem_pool_detach(q);

	/* A creator that never finishes: -ETIMEDOUT after the documented bound. */
	__atomic_store_n(&h->state, 0x494e4954u, __ATOMIC_RELAXED);
	t0 = churn_now();
	EXPECT_EQ(-ETIMEDOUT, syncmem_pool_attach(mem, len, &q));
	EXPECT_LE(SYNCMEM_POOL_ATTACH_WAIT_MS / 1000.0 - 0.01, churn_now() - t0);
	syncmem_pool_detach(p);
	munmap(mem, len);
}

TEST(exhaustion_recovers_and_bad_frees)
{
	enum { N = 32 };
	size_t len = syncmem_pool_footprint(8, N);
	char *mem = shared_mem(len);
	uint32_t offs[N], off, blocks_off = (uint32_t)len - N * 64;
	struct syncmem_pool *p;
	int i;

	ASSERT_EQ(0, syncmem_pool_init(mem, len, 8, N, &p));
	for (i = 0; i < N; i++) {
		offs[i] = syncmem_pool_alloc(p);
		ASSERT_NE(0, offs[i]);
		/* Blocks are 64-byte aligned and do not share the header's lines. */
		ASSERT_EQ(0, offs[i] % 64);
		ASSERT_LE(blocks_off, offs[i]);
	}
	EXPECT_EQ(0, syncmem_pool_alloc(p));
	EXPECT_EQ(0, syncmem_pool_free_count(p));
	EXPECT_EQ(0, syncmem_pool_free(p, offs[5]));
	EXPECT_EQ(offs[5], syncmem_pool_alloc(p));
	EXPECT_EQ(0, syncmem_pool_alloc(p));

	/* Foreign and misaligned offsets, double frees. */
	EXPECT_EQ(-EINVAL, syncmem_pool_free(p, 0));
	EXPECT_EQ(-EINVAL, syncmem_pool_free(p, 64));
	EXPECT_EQ(-EINVAL, syncmem_pool_free(p, offs[0] + 8));
	EXPECT_EQ(-EINVAL, syncmem_pool_free(p, blocks_off + N * 64));
	EXPECT_EQ(-EINVAL, syncmem_pool_free(p, UINT32_MAX));
	EXPECT_EQ(0, syncmem_pool_free(p, offs[3]));
	EXPECT_EQ(-EALREADY, syncmem_pool_free(p, offs[3]));
	EXPECT_EQ(1, syncmem_pool_free_count(p));
	for (i = 0; i < N; i++)
		if (i != 3)
			ASSERT_EQ(0, syncmem_pool_free(p, offs[i]));
	EXPECT_EQ(N, syncmem_pool_free_count(p));
	EXPECT_EQ(N, pool_drain_check(p, N));

	/* Pointers and offsets. */
	off = syncmem_pool_alloc(p);
	EXPECT_EQ(mem + off, syncmem_pool_ptr(p, off));
	EXPECT_EQ(off, syncmem_pool_off(p, syncmem_pool_ptr(p, off)));
	EXPECT_EQ(NULL, syncmem_pool_ptr(p, 0));
	EXPECT_EQ(NULL, syncmem_pool_ptr(p, (uint32_t)len));
	EXPECT_EQ(0, syncmem_pool_off(p, mem + len));
	EXPECT_EQ(0, syncmem_pool_off(p, &off));
	syncmem_pool_detach(p);
	munmap(mem, len);
}

/*
 * Several processes free the same block at once, and foreign offsets next to
 * it: exactly one free wins every time, every foreign offset is -EINVAL, and
 * the list stays intact.
 */
TEST(racing_double_frees_from_processes)
{
	enum { N = 8, PROCS = 6, ROUNDS = 200 };
	size_t len = syncmem_pool_footprint(64, N);
	char *mem = shared_mem(len + 4096);
	_Atomic int *wins = (void *)(mem + len), *eal = wins + 1, *other = wins + 2;
	_Atomic int *inval = wins + 3;
	_Atomic uint32_t *go = (void *)(wins + 4), *target = go + 1;
	struct syncmem_pool *p;
	pid_t pids[PROCS];

	ASSERT_EQ(0, syncmem_pool_init(mem, len, 64, N, &p));
	for (int i = 0; i < PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			for (uint32_t r = 1; r <= ROUNDS; r++) {
				int ret;

				while (atomic_load(go) < r)
					;
				uint32_t t = atomic_load(target);

				ret = syncmem_pool_free(p, t + 8 * (uint32_t)(i + 1));
				atomic_fetch_add(ret == -EINVAL ? inval : other, 1);
				ret = syncmem_pool_free(p, t);
				atomic_fetch_add(ret == 0 ? wins : ret == -EALREADY ? eal : other, 1);
			}
			_exit(0);
		}
	}
	for (uint32_t r = 1; r <= ROUNDS; r++) {
		uint32_t off = syncmem_pool_alloc(p);

		ASSERT_NE(0, off);
		atomic_store(target, off);
		atomic_store(go, r);
		while (atomic_load(wins) + atomic_load(eal) + atomic_load(other) <
		       (int)(r * PROCS))
			;
		ASSERT_EQ((int)r, atomic_load(wins));
	}
	for (int i = 0; i < PROCS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ(ROUNDS, atomic_load(wins));
	EXPECT_EQ(ROUNDS * (PROCS - 1), atomic_load(eal));
	EXPECT_EQ(0, atomic_load(other));
	EXPECT_EQ(ROUNDS * PROCS, atomic_load(inval));
	EXPECT_EQ(N, syncmem_pool_free_count(p));
	EXPECT_EQ(N, pool_drain_check(p, N));
	syncmem_pool_detach(p);
}

/*
 * Processes that each hold one or two blocks of five, swapping them: a
 * block is free at every instant, so no allocation may report the pool
 * empty, though blocks keep moving between the free lists.
 */
TEST(alloc_is_empty_only_when_every_list_was_empty_at_once)
{
	enum { N = 5, PROCS = 2, ROUNDS = 200000 };
	size_t len = syncmem_pool_footprint(64, N);
	char *mem = shared_mem(len + 4096);
	_Atomic int *empty = (void *)(mem + len);
	struct syncmem_pool *p;
	pid_t pids[PROCS];

	ASSERT_EQ(0, syncmem_pool_init(mem, len, 64, N, &p));
	for (int i = 0; i < PROCS; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0) {
			uint32_t held = syncmem_pool_alloc(p);

			if (!held)
				_exit(1);
			for (int n = 0; n < ROUNDS; n++) {
				uint32_t next = syncmem_pool_alloc(p);

				if (!next) {
					atomic_fetch_add(empty, 1);
					continue;
				}
				if (syncmem_pool_free(p, held))
					_exit(2);
				held = next;
			}
			_exit(syncmem_pool_free(p, held) ? 3 : 0);
		}
	}
	for (int i = 0; i < PROCS; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	EXPECT_EQ(0, atomic_load(empty));
	EXPECT_EQ(N, syncmem_pool_free_count(p));
	syncmem_pool_detach(p);
}

/* One memfd mapped twice at different addresses: offsets mean the same block. */
TEST(mapped_twice_at_different_addresses)
{
	size_t len = syncmem_pool_footprint(64, 8);
	int fd = memfd_create("pool", MFD_CLOEXEC);
	struct syncmem_pool *a, *b;
	char *ma, *mb;
	uint32_t off;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, (off_t)len));
	ma = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	mb = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, ma);
	ASSERT_NE(MAP_FAILED, mb);
	ASSERT_NE(ma, mb);
	ASSERT_EQ(0, syncmem_pool_init(ma, len, 64, 8, &a));
	ASSERT_EQ(0, syncmem_pool_attach(mb, len, &b));
	off = syncmem_pool_alloc(b);
	ASSERT_NE(0, off);
	strcpy(syncmem_pool_ptr(b, off), "written through b");
	EXPECT_STREQ("written through b", (char *)syncmem_pool_ptr(a, off));
	EXPECT_EQ(7, syncmem_pool_free_count(a));
	EXPECT_EQ(0, syncmem_pool_free(a, off));
	EXPECT_EQ(-EALREADY, syncmem_pool_free(b, off));
	EXPECT_EQ(8, syncmem_pool_free_count(b));
	syncmem_pool_detach(a);
	syncmem_pool_detach(b);
	munmap(ma, len);
	munmap(mb, len);
	close(fd);
}

/* The seed's test made checkable: 50 processes, 20 blocks, several seconds. */
TEST(fifty_processes_twenty_blocks)
{
	size_t len = syncmem_pool_footprint(64, 20);
	char *mem = shared_mem(len + 4096);
	struct churn_stats *st = (void *)(mem + len);
	struct syncmem_pool *p;

	ASSERT_EQ(0, syncmem_pool_init(mem, len, 64, 20, &p));
	EXPECT_EQ(0, churn_processes(p, st, 50, 3, 3.0));
	EXPECT_EQ(0, atomic_load(&st->double_allocs));
	EXPECT_EQ(0, atomic_load(&st->bad_stamps));
	EXPECT_EQ(0, atomic_load(&st->errors));
	EXPECT_EQ(atomic_load(&st->allocs), atomic_load(&st->frees));
	EXPECT_LT(1000, atomic_load(&st->allocs));
	EXPECT_LT(0, atomic_load(&st->exhausted));
	EXPECT_EQ(20, syncmem_pool_free_count(p));
	EXPECT_EQ(20, pool_drain_check(p, 20));
	TH_LOG("%llu allocations, %llu times exhausted, 0 double allocations, 0 lost blocks",
	       (unsigned long long)st->allocs, (unsigned long long)st->exhausted);
	syncmem_pool_detach(p);
}

struct thread_arg {
	struct syncmem_pool *p;
	struct churn_stats *st;
	uint32_t id;
};

static void *churn_thread(void *arg)
{
	struct thread_arg *a = arg;

	churn(a->p, a->st, a->id, 4, 1.0);
	return NULL;
}

TEST(threads_churn)
{
	enum { T = 8, N = 16 };
	size_t len = syncmem_pool_footprint(8, N);
	void *mem = shared_mem(len);
	struct churn_stats st = { 0 };
	struct thread_arg args[T];
	pthread_t th[T];
	struct syncmem_pool *p;

	ASSERT_EQ(0, syncmem_pool_init(mem, len, 8, N, &p));
	for (int i = 0; i < T; i++) {
		args[i] = (struct thread_arg){ p, &st, (uint32_t)i + 1 };
		ASSERT_EQ(0, pthread_create(&th[i], NULL, churn_thread, &args[i]));
	}
	for (int i = 0; i < T; i++)
		pthread_join(th[i], NULL);
	EXPECT_EQ(0, atomic_load(&st.double_allocs));
	EXPECT_EQ(0, atomic_load(&st.bad_stamps));
	EXPECT_EQ(0, atomic_load(&st.errors));
	EXPECT_EQ(N, syncmem_pool_free_count(p));
	EXPECT_EQ(N, pool_drain_check(p, N));
	syncmem_pool_detach(p);
}

TEST(sigkill_mid_churn_never_corrupts)
{
	enum { N = 40, PROCS = 10, KILL = 3, HELD = 4 };
	size_t len = syncmem_pool_footprint(64, N);
	char *mem = shared_mem(len + 4096);
	struct churn_stats *st = (void *)(mem + len);
	struct syncmem_pool *p;
	long leaked;

	ASSERT_EQ(0, syncmem_pool_init(mem, len, 64, N, &p));
	leaked = churn_with_kills(p, st, PROCS, KILL, HELD, N);
	ASSERT_LE(0, leaked);
	EXPECT_GE(KILL * (HELD + 1), leaked);
	EXPECT_EQ(0, atomic_load(&st->double_allocs));
	EXPECT_EQ(0, atomic_load(&st->bad_stamps));
	TH_LOG("%ld blocks leaked by %d killed processes; the list is intact", leaked, KILL);
	syncmem_pool_detach(p);
}

TEST_HARNESS_MAIN
