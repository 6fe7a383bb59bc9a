// SPDX-License-Identifier: GPL-2.0
/*
 * Web Locks across processes (syncmem_locks_*), each client a process:
 * ordering of exclusive requests, shared requests granted together, an
 * exclusive request between shared ones keeping its place, ifAvailable,
 * steal, timeouts, names, flags, a full manager, deaths of holders, of
 * pending requests and inside a cell's mutex, a kill torture, and a peer
 * scribbling the manager. Every documented errno is provoked.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"
#include "../lib/locks.h"

#define MS		1000000LL
#define REGION_SIZE	(4u << 20)
#define MGR_OFF		8192u		/* the manager, after the test's own page */
#define MGR_NAMES	64
#define MGR_REQS	256

struct lshared {
	_Atomic int seq;
	_Atomic int order[64];
	_Atomic int count;
	_Atomic int go;
	_Atomic int ready[16];
	_Atomic int result[16];
	_Atomic int64_t when[16];
};

FIXTURE(locks) {
	struct syncmem_region *r;
	struct lshared *sh;
	struct syncmem_locks *m;
	uint8_t *at;
	size_t size;
};

FIXTURE_SETUP(locks)
{
	self->size = syncmem_locks_footprint(MGR_NAMES, MGR_REQS);
	ASSERT_LT(0, self->size);
	ASSERT_GE(REGION_SIZE - MGR_OFF, self->size);
	ASSERT_EQ(0, syncmem_open(NULL, REGION_SIZE, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	self->at = (uint8_t *)syncmem_base(self->r) + MGR_OFF;
	ASSERT_EQ(0, syncmem_locks_init(self->r, self->at, self->size, &self->m));
}

FIXTURE_TEARDOWN(locks)
{
	syncmem_locks_detach(self->m);
	syncmem_close(self->r);
}

static int req(struct syncmem_locks *m, const char *name, unsigned flags, int64_t timeout,
	       struct syncmem_held **h)
{
	return syncmem_locks_request(m, name, strlen(name), flags, timeout, h);
}

/* Wait up to 20 s for *@flag to reach @v: 1 if it did. */
static int await_flag(_Atomic int *flag, int v)
{
	for (int i = 0; i < 20000; i++) {
		if (atomic_load(flag) >= v)
			return 1;
		usleep(1000);
	}
	return 0;
}

/* Record that client @id got in: its place in the order. */
static void arrived(struct lshared *sh, int id)
{
	int i = atomic_fetch_add(&sh->seq, 1);

	if (i < 64)
		sh->order[i] = id;
}

TEST_F(locks, footprint_init_attach_errors)
{
	struct syncmem_locks *m2 = NULL;
	struct syncmem_region *ro;
	char name[64];
	uint8_t *spare = self->at + ((self->size + 4095) & ~4095ul);

	EXPECT_EQ(0, syncmem_locks_footprint(0, 1));
	EXPECT_EQ(0, syncmem_locks_footprint(1, 0));
	EXPECT_EQ(0, syncmem_locks_footprint((1u << 20) + 1, 1));
	EXPECT_EQ(0, syncmem_locks_footprint(1, (1u << 24) + 1));
	EXPECT_LT(0, syncmem_locks_footprint(1, 1));
	/* One name per 4 requests: the larger of the two decides. */
	EXPECT_EQ(syncmem_locks_footprint(4, 1), syncmem_locks_footprint(1, 16));
	EXPECT_EQ(syncmem_locks_footprint(4, 16), syncmem_locks_footprint(4, 13));
	EXPECT_LT(syncmem_locks_footprint(4, 16), syncmem_locks_footprint(4, 17));
	EXPECT_LT(syncmem_locks_footprint(4, 16), syncmem_locks_footprint(5, 16));
	/* About 1.7 KiB a name with its 4 requests. */
	EXPECT_GT(2048 * 100, syncmem_locks_footprint(100, 400));

	EXPECT_EQ(-EINVAL, syncmem_locks_init(self->r, spare, 4096, NULL));
	EXPECT_EQ(-EINVAL, syncmem_locks_init(NULL, spare, 4096, &m2));
	EXPECT_EQ(-EINVAL, syncmem_locks_init(self->r, NULL, 4096, &m2));
	EXPECT_EQ(-EINVAL, syncmem_locks_init(self->r, spare + 8, 65536, &m2));
	EXPECT_EQ(-EINVAL, syncmem_locks_init(self->r, spare, syncmem_locks_footprint(1, 1) - 1,
					      &m2));
	EXPECT_EQ(-EINVAL, syncmem_locks_init(self->r, spare, REGION_SIZE, &m2));
	EXPECT_EQ(NULL, m2);
	EXPECT_EQ(-EEXIST, syncmem_locks_init(self->r, self->at, self->size, &m2));

	EXPECT_EQ(-EINVAL, syncmem_locks_attach(self->r, self->at, NULL));
	EXPECT_EQ(-EINVAL, syncmem_locks_attach(NULL, self->at, &m2));
	EXPECT_EQ(-EINVAL, syncmem_locks_attach(self->r, self->at + 64 + 8, &m2));
	/* Zeroed memory, then foreign bytes: no manager. */
	EXPECT_EQ(-EPROTO, syncmem_locks_attach(self->r, spare, &m2));
	memset(spare, 0x5a, 4096);
	EXPECT_EQ(-EPROTO, syncmem_locks_attach(self->r, spare, &m2));
	memset(spare, 0, 4096);
	ASSERT_EQ(0, syncmem_locks_attach(self->r, self->at, &m2));
	syncmem_locks_detach(m2);
	syncmem_locks_detach(NULL);

	/* Read-only: init is -EBADF, attach works, requests are -EBADF. */
	snprintf(name, sizeof(name), "locks-test-%d", getpid());
	{
		struct syncmem_region *rw;
		struct syncmem_locks *mrw, *mro;
		struct syncmem_held *h = NULL;
		size_t len = syncmem_locks_footprint(2, 8);

		ASSERT_EQ(0, syncmem_open(name, 1 << 20, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &rw));
		ASSERT_EQ(0, syncmem_open(name, 0, SYNCMEM_RDONLY, 0, &ro));
		syncmem_unlink(name);
		EXPECT_EQ(-EBADF, syncmem_locks_init(ro, syncmem_base(ro), len, &mro));
		ASSERT_EQ(0, syncmem_locks_init(rw, syncmem_base(rw), len, &mrw));
		ASSERT_EQ(0, syncmem_locks_attach(ro, syncmem_base(ro), &mro));
		EXPECT_EQ(-EBADF, req(mro, "x", 0, 0, &h));
		EXPECT_EQ(NULL, h);
		ASSERT_EQ(0, req(mrw, "x", 0, 0, &h));
		EXPECT_EQ(0, syncmem_locks_release(h));
		syncmem_locks_detach(mro);
		syncmem_locks_detach(mrw);
		syncmem_close(ro);
		syncmem_close(rw);
	}
}

TEST_F(locks, argument_errors)
{
	struct syncmem_held *h = (void *)1;
	char big[SYNCMEM_LOCKS_NAME_MAX + 1];

	memset(big, 'n', sizeof(big));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(NULL, "x", 1, 0, -1, &h));
	EXPECT_EQ(NULL, h);
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, NULL, 1, 0, -1, &h));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, "x", 1, 0, -1, NULL));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, "x", 0, 0, -1, &h));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, "-x", 2, 0, -1, &h));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, "-", 1, 0, -1, &h));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, "x", 1, 0x8, -1, &h));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, "x", 1, 0x100, -1, &h));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, "x", 1,
						 SYNCMEM_LOCKS_STEAL | SYNCMEM_LOCKS_SHARED, -1, &h));
	EXPECT_EQ(-EINVAL, syncmem_locks_request(self->m, "x", 1,
						 SYNCMEM_LOCKS_STEAL | SYNCMEM_LOCKS_IF_AVAILABLE,
						 -1, &h));
	EXPECT_EQ(-ENAMETOOLONG, syncmem_locks_request(self->m, big, sizeof(big), 0, -1, &h));
	EXPECT_EQ(-ENAMETOOLONG, syncmem_locks_request(self->m, big, SIZE_MAX, 0, -1, &h));
	EXPECT_EQ(NULL, h);
	ASSERT_EQ(0, syncmem_locks_request(self->m, big, SYNCMEM_LOCKS_NAME_MAX, 0, -1, &h));
	EXPECT_EQ(0, syncmem_locks_stolen(h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	/* A '-' further in is an ordinary byte. */
	ASSERT_EQ(0, req(self->m, "x-", 0, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	EXPECT_EQ(-EINVAL, syncmem_locks_release(NULL));
	EXPECT_EQ(0, syncmem_locks_stolen(NULL));
	/* Every valid combination. */
	for (unsigned f = 0; f < 8; f++) {
		if ((f & SYNCMEM_LOCKS_STEAL) && (f & ~SYNCMEM_LOCKS_STEAL))
			continue;
		ASSERT_EQ(0, req(self->m, "combo", f, -1, &h));
		EXPECT_EQ(0, syncmem_locks_release(h));
	}
}

TEST_F(locks, names_are_bytes)
{
	struct syncmem_held *h[6], *busy;
	char a[SYNCMEM_LOCKS_NAME_MAX], b[SYNCMEM_LOCKS_NAME_MAX];
	const unsigned x = SYNCMEM_LOCKS_IF_AVAILABLE;

	memset(a, 0, sizeof(a));
	memset(b, 0, sizeof(b));
	b[sizeof(b) - 1] = 1;
	/* NUL bytes are part of names; so is a trailing one; so is the last of 1024. */
	ASSERT_EQ(0, syncmem_locks_request(self->m, "a\0b", 3, x, -1, &h[0]));
	ASSERT_EQ(0, syncmem_locks_request(self->m, "a\0c", 3, x, -1, &h[1]));
	ASSERT_EQ(0, syncmem_locks_request(self->m, "a", 1, x, -1, &h[2]));
	ASSERT_EQ(0, syncmem_locks_request(self->m, "a\0", 2, x, -1, &h[3]));
	ASSERT_EQ(0, syncmem_locks_request(self->m, a, sizeof(a), x, -1, &h[4]));
	ASSERT_EQ(0, syncmem_locks_request(self->m, b, sizeof(b), x, -1, &h[5]));
	/* Each is held: the same bytes again are busy. */
	EXPECT_EQ(-EBUSY, syncmem_locks_request(self->m, "a\0b", 3, x, -1, &busy));
	EXPECT_EQ(-EBUSY, syncmem_locks_request(self->m, a, sizeof(a), x, -1, &busy));
	EXPECT_EQ(-EBUSY, syncmem_locks_request(self->m, "a", 1, x | SYNCMEM_LOCKS_SHARED, -1,
						&busy));
	EXPECT_EQ(NULL, busy);
	for (int i = 0; i < 6; i++)
		EXPECT_EQ(0, syncmem_locks_release(h[i]));
}

TEST_F(locks, same_process_queues_like_anyone)
{
	struct syncmem_held *h1, *h2, *h3;
	int64_t t0;

	ASSERT_EQ(0, req(self->m, "r", 0, -1, &h1));
	/* An exclusive re-request waits for its own process's hold. */
	t0 = now_ns();
	EXPECT_EQ(-ETIMEDOUT, req(self->m, "r", 0, 50 * MS, &h2));
	EXPECT_LE(50 * MS, now_ns() - t0);
	EXPECT_EQ(-ETIMEDOUT, req(self->m, "r", SYNCMEM_LOCKS_SHARED, 0, &h2));
	EXPECT_EQ(-EBUSY, req(self->m, "r", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h2));
	EXPECT_EQ(0, region_waiters(self->r));
	EXPECT_EQ(0, syncmem_locks_release(h1));
	/* Shared twice is granted twice. */
	ASSERT_EQ(0, req(self->m, "r", SYNCMEM_LOCKS_SHARED, -1, &h1));
	ASSERT_EQ(0, req(self->m, "r", SYNCMEM_LOCKS_SHARED, 0, &h2));
	EXPECT_EQ(-EBUSY, req(self->m, "r", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h3));
	EXPECT_EQ(0, syncmem_locks_release(h1));
	EXPECT_EQ(-EBUSY, req(self->m, "r", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h3));
	EXPECT_EQ(0, syncmem_locks_release(h2));
	ASSERT_EQ(0, req(self->m, "r", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h3));
	EXPECT_EQ(0, syncmem_locks_release(h3));
}

/* A client: request @name with @flags, record its arrival, hold @hold_ms, release. */
static int client(struct syncmem_locks *m, struct lshared *sh, int id, const char *name,
		  unsigned flags, int hold_ms)
{
	struct syncmem_held *h;
	int ret = req(m, name, flags, -1, &h);

	if (ret)
		return 10;
	sh->when[id % 16] = now_ns();
	arrived(sh, id);
	usleep(hold_ms * 1000);
	arrived(sh, 100 + id);
	return syncmem_locks_release(h) ? 11 : 0;
}

/* Fork a client, then wait until @waiters are queued in the region. */
static pid_t queue_client(struct syncmem_region *r, struct syncmem_locks *m, struct lshared *sh,
			  int id, const char *name, unsigned flags, int hold_ms, uint64_t waiters)
{
	pid_t pid = fork();

	if (pid == 0)
		_exit(client(m, sh, id, name, flags, hold_ms));
	if (pid > 0 && !await_waiters(r, waiters)) {
		kill(pid, SIGKILL);
		return -1;
	}
	return pid;
}

TEST_F(locks, exclusive_requests_in_order)
{
	struct syncmem_held *h;
	pid_t pid[5];

	ASSERT_EQ(0, req(self->m, "x", 0, -1, &h));
	for (int i = 0; i < 5; i++) {
		pid[i] = queue_client(self->r, self->m, self->sh, i, "x", 0, 5, i + 1);
		ASSERT_LT(0, pid[i]);
	}
	EXPECT_EQ(0, syncmem_locks_release(h));
	for (int i = 0; i < 5; i++)
		EXPECT_EQ(0, wait_exit(pid[i]));
	ASSERT_EQ(10, atomic_load(&self->sh->seq));
	for (int i = 0; i < 5; i++) {
		EXPECT_EQ(i, self->sh->order[2 * i]);
		EXPECT_EQ(100 + i, self->sh->order[2 * i + 1]);
	}
}

TEST_F(locks, shared_requests_granted_together)
{
	struct syncmem_held *h;
	pid_t pid[4];

	ASSERT_EQ(0, req(self->m, "s", 0, -1, &h));
	for (int i = 0; i < 3; i++) {
		pid[i] = fork();
		ASSERT_LE(0, pid[i]);
		if (pid[i] == 0) {
			struct syncmem_held *mine;

			if (req(self->m, "s", SYNCMEM_LOCKS_SHARED, -1, &mine))
				_exit(10);
			arrived(self->sh, i);
			atomic_fetch_add(&self->sh->count, 1);
			/* All three are in before any leaves. */
			if (!await_flag(&self->sh->count, 3))
				_exit(11);
			usleep(20000);
			arrived(self->sh, 100 + i);
			_exit(syncmem_locks_release(mine) ? 12 : 0);
		}
		ASSERT_EQ(1, await_waiters(self->r, i + 1));
	}
	/* An exclusive request behind them waits for all three. */
	pid[3] = queue_client(self->r, self->m, self->sh, 3, "s", 0, 1, 4);
	ASSERT_LT(0, pid[3]);
	EXPECT_EQ(0, syncmem_locks_release(h));
	for (int i = 0; i < 4; i++)
		EXPECT_EQ(0, wait_exit(pid[i]));
	ASSERT_EQ(8, atomic_load(&self->sh->seq));
	for (int i = 0; i < 3; i++)
		EXPECT_GT(3, self->sh->order[i]);
	EXPECT_EQ(3, self->sh->order[6]);
}

TEST_F(locks, exclusive_between_shared_keeps_its_place)
{
	struct syncmem_held *h;
	pid_t s1, e, s2;

	ASSERT_EQ(0, req(self->m, "m", 0, -1, &h));
	s1 = queue_client(self->r, self->m, self->sh, 1, "m", SYNCMEM_LOCKS_SHARED, 300, 1);
	e = queue_client(self->r, self->m, self->sh, 2, "m", 0, 50, 2);
	s2 = queue_client(self->r, self->m, self->sh, 3, "m", SYNCMEM_LOCKS_SHARED, 1, 3);
	ASSERT_LT(0, s1);
	ASSERT_LT(0, e);
	ASSERT_LT(0, s2);
	EXPECT_EQ(0, syncmem_locks_release(h));
	EXPECT_EQ(0, wait_exit(s1));
	EXPECT_EQ(0, wait_exit(e));
	EXPECT_EQ(0, wait_exit(s2));
	ASSERT_EQ(6, atomic_load(&self->sh->seq));
	/* S2 is compatible with S1 but queued behind E: it waits for E. */
	EXPECT_EQ(1, self->sh->order[0]);
	EXPECT_EQ(101, self->sh->order[1]);
	EXPECT_EQ(2, self->sh->order[2]);
	EXPECT_EQ(102, self->sh->order[3]);
	EXPECT_EQ(3, self->sh->order[4]);
}

TEST_F(locks, mixed_modes_in_queue_order)
{
	/* Queued: S S E S S E E S: grants in groups, never out of order. */
	static const unsigned mode[8] = { 1, 1, 0, 1, 1, 0, 0, 1 };
	struct syncmem_held *h;
	pid_t pid[8];
	int pos[8];

	ASSERT_EQ(0, req(self->m, "mix", 0, -1, &h));
	for (int i = 0; i < 8; i++) {
		pid[i] = queue_client(self->r, self->m, self->sh, i, "mix",
				      mode[i] ? SYNCMEM_LOCKS_SHARED : 0, 20, i + 1);
		ASSERT_LT(0, pid[i]);
	}
	EXPECT_EQ(0, syncmem_locks_release(h));
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(0, wait_exit(pid[i]));
	ASSERT_EQ(16, atomic_load(&self->sh->seq));
	for (int i = 0; i < 16; i++)
		if (self->sh->order[i] < 100)
			pos[self->sh->order[i]] = i;
	/* Each arrives after every earlier request of a group that excludes it left. */
	for (int i = 0; i < 8; i++)
		for (int j = 0; j < i; j++)
			if (!mode[i] || !mode[j]) {
				int left = -1;

				for (int k = 0; k < 16; k++)
					if (self->sh->order[k] == 100 + j)
						left = k;
				EXPECT_LT(left, pos[i]);
			}
}

TEST_F(locks, if_available)
{
	const unsigned ifa = SYNCMEM_LOCKS_IF_AVAILABLE;
	struct syncmem_held *h;
	pid_t a, b;

	/* Free. */
	ASSERT_EQ(0, req(self->m, "f", ifa, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	/* Held exclusive by another process. */
	a = fork();
	ASSERT_LE(0, a);
	if (a == 0) {
		if (req(self->m, "f", 0, -1, &h))
			_exit(10);
		atomic_store(&self->sh->ready[0], 1);
		await_flag(&self->sh->go, 1);
		_exit(syncmem_locks_release(h) ? 11 : 0);
	}
	ASSERT_EQ(1, await_flag(&self->sh->ready[0], 1));
	h = NULL;
	EXPECT_EQ(-EBUSY, req(self->m, "f", ifa, -1, &h));
	EXPECT_EQ(-EBUSY, req(self->m, "f", ifa | SYNCMEM_LOCKS_SHARED, -1, &h));
	EXPECT_EQ(-ETIMEDOUT, req(self->m, "f", 0, 0, &h));
	EXPECT_EQ(-ETIMEDOUT, req(self->m, "f", SYNCMEM_LOCKS_SHARED, 0, &h));
	EXPECT_EQ(NULL, h);
	EXPECT_EQ(0, region_waiters(self->r));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(a));

	/* Held shared: shared is available, exclusive is not. */
	atomic_store(&self->sh->go, 0);
	atomic_store(&self->sh->ready[0], 0);
	a = fork();
	ASSERT_LE(0, a);
	if (a == 0) {
		if (req(self->m, "f", SYNCMEM_LOCKS_SHARED, -1, &h))
			_exit(10);
		atomic_store(&self->sh->ready[0], 1);
		await_flag(&self->sh->go, 1);
		_exit(syncmem_locks_release(h) ? 11 : 0);
	}
	ASSERT_EQ(1, await_flag(&self->sh->ready[0], 1));
	ASSERT_EQ(0, req(self->m, "f", ifa | SYNCMEM_LOCKS_SHARED, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	EXPECT_EQ(-EBUSY, req(self->m, "f", ifa, -1, &h));
	/* With an exclusive request queued, shared is no longer available. */
	b = queue_client(self->r, self->m, self->sh, 1, "f", 0, 1, 1);
	ASSERT_LT(0, b);
	EXPECT_EQ(-EBUSY, req(self->m, "f", ifa | SYNCMEM_LOCKS_SHARED, -1, &h));
	EXPECT_EQ(-ETIMEDOUT, req(self->m, "f", SYNCMEM_LOCKS_SHARED, 0, &h));
	EXPECT_EQ(1, region_waiters(self->r));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(a));
	EXPECT_EQ(0, wait_exit(b));
	ASSERT_EQ(0, req(self->m, "f", ifa, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

TEST_F(locks, steal)
{
	struct syncmem_held *h;
	pid_t holder[2], b1, b2;

	for (int mode = 0; mode < 2; mode++) {
		int n = mode ? 2 : 1;

		atomic_store(&self->sh->seq, 0);
		atomic_store(&self->sh->go, 0);
		for (int i = 0; i < n; i++) {
			atomic_store(&self->sh->ready[i], 0);
			holder[i] = fork();
			ASSERT_LE(0, holder[i]);
			if (holder[i] == 0) {
				if (req(self->m, "t", mode ? SYNCMEM_LOCKS_SHARED : 0, -1, &h))
					_exit(10);
				atomic_store(&self->sh->ready[i], 1);
				await_flag(&self->sh->go, 1);
				/* Told: stolen, and the release says so. */
				if (syncmem_locks_stolen(h) != 1)
					_exit(11);
				_exit(syncmem_locks_release(h) == -ECONNABORTED ? 0 : 12);
			}
			ASSERT_EQ(1, await_flag(&self->sh->ready[i], 1));
		}
		b1 = queue_client(self->r, self->m, self->sh, 1, "t", 0, 1, 1);
		b2 = queue_client(self->r, self->m, self->sh, 2, "t", SYNCMEM_LOCKS_SHARED, 1, 2);
		ASSERT_LT(0, b1);
		ASSERT_LT(0, b2);
		ASSERT_EQ(0, req(self->m, "t", SYNCMEM_LOCKS_STEAL, -1, &h));
		EXPECT_EQ(0, syncmem_locks_stolen(h));
		atomic_store(&self->sh->go, 1);
		for (int i = 0; i < n; i++)
			EXPECT_EQ(0, wait_exit(holder[i]));
		/* The queue waits for the stealer, and keeps its order. */
		usleep(50000);
		EXPECT_EQ(0, atomic_load(&self->sh->seq));
		EXPECT_EQ(2, region_waiters(self->r));
		EXPECT_EQ(0, syncmem_locks_release(h));
		EXPECT_EQ(0, wait_exit(b1));
		EXPECT_EQ(0, wait_exit(b2));
		ASSERT_EQ(4, atomic_load(&self->sh->seq));
		EXPECT_EQ(1, self->sh->order[0]);
		EXPECT_EQ(101, self->sh->order[1]);
		EXPECT_EQ(2, self->sh->order[2]);
	}
	/* Stealing a free name, and one's own hold. */
	ASSERT_EQ(0, req(self->m, "t2", SYNCMEM_LOCKS_STEAL, -1, &h));
	{
		struct syncmem_held *h2;

		ASSERT_EQ(0, req(self->m, "t2", SYNCMEM_LOCKS_STEAL, -1, &h2));
		EXPECT_EQ(1, syncmem_locks_stolen(h));
		EXPECT_EQ(0, syncmem_locks_stolen(h2));
		EXPECT_EQ(-ECONNABORTED, syncmem_locks_release(h));
		EXPECT_EQ(0, syncmem_locks_release(h2));
	}
	ASSERT_EQ(0, req(self->m, "t2", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

TEST_F(locks, timeouts)
{
	struct syncmem_held *h;
	int64_t t0;
	pid_t b, c;

	ASSERT_EQ(0, req(self->m, "w", 0, -1, &h));
	/* Alone: it times out, and nothing stays queued. */
	b = fork();
	ASSERT_LE(0, b);
	if (b == 0) {
		struct syncmem_held *mine = NULL;

		t0 = now_ns();
		if (req(self->m, "w", 0, 100 * MS, &mine) != -ETIMEDOUT || mine)
			_exit(10);
		_exit(now_ns() - t0 >= 100 * MS ? 0 : 11);
	}
	EXPECT_EQ(0, wait_exit(b));
	EXPECT_EQ(0, region_waiters(self->r));
	/* Behind another: it leaves, the one ahead stays and is granted. */
	b = queue_client(self->r, self->m, self->sh, 1, "w", 0, 1, 1);
	ASSERT_LT(0, b);
	c = fork();
	ASSERT_LE(0, c);
	if (c == 0) {
		struct syncmem_held *mine;

		_exit(req(self->m, "w", SYNCMEM_LOCKS_SHARED, 200 * MS, &mine) == -ETIMEDOUT ?
		      0 : 10);
	}
	EXPECT_EQ(0, wait_exit(c));
	EXPECT_EQ(1, region_waiters(self->r));
	EXPECT_EQ(0, syncmem_locks_release(h));
	EXPECT_EQ(0, wait_exit(b));
	EXPECT_EQ(2, atomic_load(&self->sh->seq));
	/* The head times out: the one behind it is considered at once. */
	atomic_store(&self->sh->seq, 0);
	ASSERT_EQ(0, req(self->m, "w", SYNCMEM_LOCKS_SHARED, -1, &h));
	b = fork();
	ASSERT_LE(0, b);
	if (b == 0) {
		struct syncmem_held *mine;

		_exit(req(self->m, "w", 0, 300 * MS, &mine) == -ETIMEDOUT ? 0 : 10);
	}
	ASSERT_EQ(1, await_waiters(self->r, 1));
	c = queue_client(self->r, self->m, self->sh, 2, "w", SYNCMEM_LOCKS_SHARED, 1, 2);
	ASSERT_LT(0, c);
	EXPECT_EQ(0, wait_exit(b));
	EXPECT_EQ(0, wait_exit(c));
	EXPECT_EQ(2, atomic_load(&self->sh->seq));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

TEST(locks_full_manager)
{
	size_t len = syncmem_locks_footprint(2, 8);
	struct syncmem_held *h[9];
	struct syncmem_region *r;
	struct syncmem_locks *m;
	pid_t pid;

	ASSERT_EQ(0, syncmem_open(NULL, 1 << 20, 0, 0, &r));
	ASSERT_EQ(0, syncmem_locks_init(r, syncmem_base(r), len, &m));
	/* Two names. */
	ASSERT_EQ(0, req(m, "a", 0, -1, &h[0]));
	ASSERT_EQ(0, req(m, "b", 0, -1, &h[1]));
	EXPECT_EQ(-ENOSPC, req(m, "c", 0, -1, &h[2]));
	EXPECT_EQ(-ENOSPC, req(m, "c", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h[2]));
	EXPECT_EQ(0, syncmem_locks_release(h[0]));
	ASSERT_EQ(0, req(m, "c", 0, -1, &h[0]));
	EXPECT_EQ(0, syncmem_locks_release(h[1]));
	/* Eight requests: "c" and seven shares of "b". */
	for (int i = 1; i < 8; i++)
		ASSERT_EQ(0, req(m, "b", SYNCMEM_LOCKS_SHARED, -1, &h[i]));
	EXPECT_EQ(-ENOSPC, req(m, "b", SYNCMEM_LOCKS_SHARED, -1, &h[8]));
	EXPECT_EQ(0, syncmem_locks_release(h[7]));
	ASSERT_EQ(0, req(m, "b", SYNCMEM_LOCKS_SHARED, -1, &h[7]));
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(0, syncmem_locks_release(h[i]));
	/* Room this process keeps for later is another process's when it needs it. */
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		for (int i = 0; i < 8; i++)
			if (req(m, "b", SYNCMEM_LOCKS_SHARED, -1, &h[i]))
				_exit(10 + i);
		_exit(0);
	}
	EXPECT_EQ(0, wait_exit(pid));
	/* And a dead process's holds and names are free again. */
	for (int i = 0; i < 8; i++)
		ASSERT_EQ(0, req(m, i % 2 ? "d" : "e", SYNCMEM_LOCKS_SHARED, -1, &h[i]));
	for (int i = 0; i < 8; i++)
		EXPECT_EQ(0, syncmem_locks_release(h[i]));
	syncmem_locks_detach(m);
	syncmem_close(r);
}

/* A child that takes @name in @flags' mode, says so, and dies holding it. */
static pid_t holder_dies(struct syncmem_locks *m, struct lshared *sh, int id, const char *name,
			 unsigned flags, bool wait_for_kill)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_held *h;

		if (req(m, name, flags, -1, &h))
			_exit(10);
		atomic_store(&sh->ready[id], 1);
		if (wait_for_kill)
			pause();
		_exit(0);
	}
	if (pid > 0 && !await_flag(&sh->ready[id], 1))
		return -1;
	return pid;
}

TEST_F(locks, exclusive_holder_dies)
{
	struct syncmem_held *h;
	pid_t a, b;

	/* Nobody waits: the next grant, shared, is told once. */
	a = holder_dies(self->m, self->sh, 0, "d", 0, false);
	ASSERT_LT(0, a);
	EXPECT_EQ(0, wait_exit(a));
	ASSERT_EQ(-EOWNERDEAD, req(self->m, "d", SYNCMEM_LOCKS_SHARED, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	ASSERT_EQ(0, req(self->m, "d", 0, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	/* IF_AVAILABLE is told too. */
	a = holder_dies(self->m, self->sh, 1, "d", 0, false);
	ASSERT_LT(0, a);
	EXPECT_EQ(0, wait_exit(a));
	ASSERT_EQ(-EOWNERDEAD, req(self->m, "d", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));

	/* A waiter is woken at once by the holder's death. */
	a = holder_dies(self->m, self->sh, 2, "d", 0, true);
	ASSERT_LT(0, a);
	b = fork();
	ASSERT_LE(0, b);
	if (b == 0) {
		struct syncmem_held *mine;
		int ret = req(self->m, "d", 0, 10000 * MS, &mine);

		self->sh->when[1] = now_ns();
		_exit(ret == -EOWNERDEAD && !syncmem_locks_release(mine) ? 0 : 10);
	}
	ASSERT_EQ(1, await_waiters(self->r, 1));
	self->sh->when[0] = now_ns();
	kill(a, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(a));
	EXPECT_EQ(0, wait_exit(b));
	EXPECT_GT(1000 * MS, self->sh->when[1] - self->sh->when[0]);
	ASSERT_EQ(0, req(self->m, "d", 0, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

TEST_F(locks, shared_holder_dies_silently)
{
	struct syncmem_held *h;
	pid_t a, b;

	a = holder_dies(self->m, self->sh, 0, "e", SYNCMEM_LOCKS_SHARED, false);
	ASSERT_LT(0, a);
	EXPECT_EQ(0, wait_exit(a));
	ASSERT_EQ(0, req(self->m, "e", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	/* A waiting exclusive request is granted at once, and not told. */
	a = holder_dies(self->m, self->sh, 1, "e", SYNCMEM_LOCKS_SHARED, true);
	ASSERT_LT(0, a);
	b = fork();
	ASSERT_LE(0, b);
	if (b == 0) {
		struct syncmem_held *mine;
		int ret = req(self->m, "e", 0, 10000 * MS, &mine);

		_exit(!ret && !syncmem_locks_release(mine) ? 0 : 10);
	}
	ASSERT_EQ(1, await_waiters(self->r, 1));
	kill(a, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(a));
	EXPECT_EQ(0, wait_exit(b));
}

TEST_F(locks, pending_requests_vanish)
{
	struct syncmem_held *h;
	pid_t b, c;

	/* Behind a live holder: the one behind the dead request moves up. */
	ASSERT_EQ(0, req(self->m, "p", 0, -1, &h));
	b = queue_client(self->r, self->m, self->sh, 1, "p", 0, 1, 1);
	c = queue_client(self->r, self->m, self->sh, 2, "p", 0, 1, 2);
	ASSERT_LT(0, b);
	ASSERT_LT(0, c);
	kill(b, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(b));
	EXPECT_EQ(1, await_waiters(self->r, 1));
	EXPECT_EQ(0, syncmem_locks_release(h));
	EXPECT_EQ(0, wait_exit(c));
	ASSERT_EQ(2, atomic_load(&self->sh->seq));
	EXPECT_EQ(2, self->sh->order[0]);

	/* Alone in the queue: its grant is not a holder's death. */
	ASSERT_EQ(0, req(self->m, "p", 0, -1, &h));
	b = queue_client(self->r, self->m, self->sh, 3, "p", 0, 1, 1);
	ASSERT_LT(0, b);
	kill(b, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(b));
	EXPECT_EQ(0, syncmem_locks_release(h));
	ASSERT_EQ(0, req(self->m, "p", 0, 1000 * MS, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	ASSERT_EQ(0, req(self->m, "p", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

/* The cell of @name in the manager at @at (the test knows the layout). */
static struct locks_cell *cell_named(uint8_t *at, const char *name)
{
	struct locks_header *hd = (struct locks_header *)at;
	struct locks_cell *cells = (struct locks_cell *)(at + hd->cells_off);

	for (uint32_t i = 0; i < hd->max_names; i++)
		if (cells[i].len == strlen(name) && !memcmp(cells[i].name, name, cells[i].len))
			return &cells[i];
	return NULL;
}

TEST_F(locks, death_inside_the_mutex)
{
	struct locks_cell *c;
	struct syncmem_held *h;
	pid_t b, k;

	ASSERT_EQ(0, req(self->m, "q", 0, -1, &h));
	b = queue_client(self->r, self->m, self->sh, 1, "q", 0, 1, 1);
	ASSERT_LT(0, b);
	c = cell_named(self->at, "q");
	ASSERT_NE(NULL, c);
	/* A process dies in the mutex with the queue half changed. */
	k = fork();
	ASSERT_LE(0, k);
	if (k == 0) {
		if (syncmem_lock(self->r, &c->m))
			_exit(10);
		c->qhead = 0;
		c->qtail = 0;
		c->closed |= CLOSED_BUSY;
		_exit(0);
	}
	EXPECT_EQ(0, wait_exit(k));
	/* The release's kick takes the mutex over, rebuilds the queue, grants. */
	EXPECT_EQ(0, syncmem_locks_release(h));
	EXPECT_EQ(0, wait_exit(b));
	EXPECT_EQ(2, atomic_load(&self->sh->seq));
	ASSERT_EQ(0, req(self->m, "q", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

/* A child that takes @name in @flags' mode (blocking), says so in ready[@id], and waits. */
static pid_t sitter(struct syncmem_locks *m, struct lshared *sh, int id, const char *name,
		    unsigned flags)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_held *h;
		uint64_t me = 0;

		syncmem_pool_self_id(&me);
		sh->when[id] = (int64_t)me;
		if (req(m, name, flags, -1, &h))
			_exit(10);
		atomic_store(&sh->ready[id], 1);
		pause();
		_exit(0);
	}
	return pid;
}

/*
 * A share granted from the queue is counted under the cell's mutex, yet
 * shared requests and releases still take neither the mutex nor a queued
 * writer's place: a peer holds the mutex while one comes and goes.
 */
TEST_F(locks, shares_granted_from_the_queue_keep_shares_fast)
{
	struct syncmem_held *h, *h2;
	struct locks_cell *c;
	pid_t s, k, e;

	ASSERT_EQ(0, req(self->m, "f", 0, -1, &h));
	s = sitter(self->m, self->sh, 0, "f", SYNCMEM_LOCKS_SHARED);
	ASSERT_LT(0, s);
	ASSERT_EQ(1, await_waiters(self->r, 1));
	EXPECT_EQ(0, syncmem_locks_release(h));
	ASSERT_EQ(1, await_flag(&self->sh->ready[0], 1));
	c = cell_named(self->at, "f");
	ASSERT_NE(NULL, c);
	EXPECT_EQ(CLOSED_SLOW, atomic_load((_Atomic uint32_t *)&c->closed));
	k = fork();
	ASSERT_LE(0, k);
	if (k == 0) {
		if (syncmem_lock(self->r, &c->m))
			_exit(10);
		atomic_store(&self->sh->ready[1], 1);
		if (!await_flag(&self->sh->go, 1))
			_exit(11);
		_exit(syncmem_unlock(self->r, &c->m) ? 12 : 0);
	}
	ASSERT_EQ(1, await_flag(&self->sh->ready[1], 1));
	EXPECT_EQ(0, req(self->m, "f", SYNCMEM_LOCKS_SHARED | SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h2));
	EXPECT_EQ(0, syncmem_locks_release(h2));
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(k));
	EXPECT_EQ(-EBUSY, req(self->m, "f", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h2));
	/* A writer queued behind the share keeps its place. */
	e = queue_client(self->r, self->m, self->sh, 2, "f", 0, 1, 1);
	ASSERT_LT(0, e);
	EXPECT_EQ(-EBUSY, req(self->m, "f", SYNCMEM_LOCKS_SHARED | SYNCMEM_LOCKS_IF_AVAILABLE,
			      -1, &h2));
	kill(s, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(s));
	EXPECT_EQ(0, wait_exit(e));
	ASSERT_EQ(0, req(self->m, "f", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

/*
 * More processes than a name has share slots, one after another: each
 * still counts its share in a slot (the slots of the dead are taken back),
 * not under the cell's mutex.
 */
TEST_F(locks, processes_that_come_and_go_keep_shares_in_slots)
{
	struct syncmem_held *h;

	ASSERT_EQ(0, req(self->m, "g", 0, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
	for (int i = 0; i < LOCKS_SLOTS + 4; i++) {
		pid_t pid = fork();

		ASSERT_LE(0, pid);
		if (pid == 0) {
			if (req(self->m, "g", SYNCMEM_LOCKS_SHARED, -1, &h))
				_exit(10);
			if ((h->flags & REQ_SLOW) || h->slot >= LOCKS_SLOTS)
				_exit(11);
			_exit(syncmem_locks_release(h) ? 12 : 0);
		}
		ASSERT_EQ(0, wait_exit(pid));
	}
	ASSERT_EQ(0, req(self->m, "g", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

static int info_is(const struct syncmem_lock_info *l, const char *name, uint32_t mode, pid_t pid,
		   uint64_t client)
{
	return l->len == strlen(name) && !memcmp(l->name, name, l->len) && l->mode == mode &&
	       l->pid == pid && l->client == client;
}

/*
 * Sleep past one tick of the coarse clock: where reading CLOCK_MONOTONIC
 * is a system call, grants are stamped with the coarse clock (locks.rst),
 * and query's order across processes holds to within a tick.
 */
static void next_tick(void)
{
	struct timespec res;

	clock_getres(CLOCK_MONOTONIC_COARSE, &res);
	usleep((useconds_t)(res.tv_nsec / 1000) + 1000);
}

TEST_F(locks, query_tells_holders_and_queues)
{
	struct syncmem_lock_info held[8], pending[8];
	size_t nh = 8, np = 8;
	struct syncmem_held *h;
	pid_t pid[6];
	uint64_t me = 0;

	ASSERT_EQ(0, syncmem_pool_self_id(&me));
	/* Held: q1 by us, then q2 shared by A and B. */
	ASSERT_EQ(0, req(self->m, "q1", 0, -1, &h));
	next_tick();
	pid[0] = sitter(self->m, self->sh, 0, "q2", SYNCMEM_LOCKS_SHARED);
	ASSERT_EQ(1, await_flag(&self->sh->ready[0], 1));
	next_tick();
	pid[1] = sitter(self->m, self->sh, 1, "q2", SYNCMEM_LOCKS_SHARED);
	ASSERT_EQ(1, await_flag(&self->sh->ready[1], 1));
	/* Pending: C shared on q1, D exclusive on q2, E exclusive on q1. */
	pid[2] = sitter(self->m, self->sh, 2, "q1", SYNCMEM_LOCKS_SHARED);
	ASSERT_EQ(1, await_waiters(self->r, 1));
	next_tick();
	pid[3] = sitter(self->m, self->sh, 3, "q2", 0);
	ASSERT_EQ(1, await_waiters(self->r, 2));
	next_tick();
	pid[4] = sitter(self->m, self->sh, 4, "q1", 0);
	ASSERT_EQ(1, await_waiters(self->r, 3));

	ASSERT_EQ(0, syncmem_locks_query(self->m, held, &nh, pending, &np));
	ASSERT_EQ(3, nh);
	ASSERT_EQ(3, np);
	EXPECT_TRUE(info_is(&held[0], "q1", 0, getpid(), me));
	EXPECT_TRUE(info_is(&held[1], "q2", SYNCMEM_LOCKS_SHARED, pid[0], self->sh->when[0]));
	EXPECT_TRUE(info_is(&held[2], "q2", SYNCMEM_LOCKS_SHARED, pid[1], self->sh->when[1]));
	EXPECT_TRUE(info_is(&pending[0], "q1", SYNCMEM_LOCKS_SHARED, pid[2], self->sh->when[2]));
	EXPECT_TRUE(info_is(&pending[1], "q2", 0, pid[3], self->sh->when[3]));
	EXPECT_TRUE(info_is(&pending[2], "q1", 0, pid[4], self->sh->when[4]));
	for (int i = 1; i < 3; i++) {
		EXPECT_LT(held[i - 1].since_ns, held[i].since_ns);
		EXPECT_LT(pending[i - 1].since_ns, pending[i].since_ns);
	}
	EXPECT_GE(now_ns(), pending[2].since_ns);

	/* Entries past the capacity are counted, not written. */
	memset(held, 0x77, sizeof(held));
	nh = 1;
	np = 0;
	ASSERT_EQ(0, syncmem_locks_query(self->m, held, &nh, NULL, &np));
	EXPECT_EQ(3, nh);
	EXPECT_EQ(3, np);
	EXPECT_TRUE(info_is(&held[0], "q1", 0, getpid(), me));
	EXPECT_EQ(0x77777777u, held[1].mode);
	nh = np = 0;
	ASSERT_EQ(0, syncmem_locks_query(self->m, NULL, &nh, NULL, &np));
	EXPECT_EQ(3, nh);
	EXPECT_EQ(-EINVAL, syncmem_locks_query(self->m, NULL, &nh, NULL, &np));
	nh = 0;
	EXPECT_EQ(-EINVAL, syncmem_locks_query(self->m, NULL, &nh, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_locks_query(self->m, NULL, NULL, NULL, &np));
	EXPECT_EQ(-EINVAL, syncmem_locks_query(NULL, NULL, &nh, NULL, &np));

	/* The dead are not reported: B's share, E's request. */
	kill(pid[1], SIGKILL);
	kill(pid[4], SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(pid[1]));
	EXPECT_EQ(128 + SIGKILL, wait_exit(pid[4]));
	nh = np = 8;
	ASSERT_EQ(0, syncmem_locks_query(self->m, held, &nh, pending, &np));
	ASSERT_EQ(2, nh);
	ASSERT_EQ(2, np);
	EXPECT_TRUE(info_is(&held[1], "q2", SYNCMEM_LOCKS_SHARED, pid[0], self->sh->when[0]));
	EXPECT_TRUE(info_is(&pending[1], "q2", 0, pid[3], self->sh->when[3]));
	EXPECT_EQ(0, syncmem_locks_release(h));
	for (int i = 0; i < 5; i++)
		if (i != 1 && i != 4) {
			kill(pid[i], SIGKILL);
			wait_exit(pid[i]);
		}
}

TEST(locks_query_on_a_read_only_view)
{
	struct syncmem_lock_info held[2], pending[2];
	size_t nh = 2, np = 2, len = syncmem_locks_footprint(4, 16);
	struct syncmem_region *rw, *ro;
	struct syncmem_locks *m, *mro;
	struct syncmem_held *h;
	char name[64];

	snprintf(name, sizeof(name), "locks-ro-%d", getpid());
	ASSERT_EQ(0, syncmem_open(name, 1 << 20, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600, &rw));
	ASSERT_EQ(0, syncmem_open(name, 0, SYNCMEM_RDONLY, 0, &ro));
	syncmem_unlink(name);
	ASSERT_EQ(0, syncmem_locks_init(rw, syncmem_base(rw), len, &m));
	ASSERT_EQ(0, req(m, "seen", SYNCMEM_LOCKS_SHARED, -1, &h));
	ASSERT_EQ(0, syncmem_locks_attach(ro, syncmem_base(ro), &mro));
	ASSERT_EQ(0, syncmem_locks_query(mro, held, &nh, pending, &np));
	EXPECT_EQ(1, nh);
	EXPECT_EQ(0, np);
	EXPECT_TRUE(info_is(&held[0], "seen", SYNCMEM_LOCKS_SHARED, getpid(), held[0].client));
	EXPECT_NE(0, held[0].client);
	EXPECT_EQ(0, syncmem_locks_release(h));
	nh = np = 2;
	ASSERT_EQ(0, syncmem_locks_query(mro, held, &nh, pending, &np));
	EXPECT_EQ(0, nh);
	syncmem_locks_detach(mro);
	syncmem_locks_detach(m);
	syncmem_close(ro);
	syncmem_close(rw);
}

/* What an async request's callback saw. */
struct acb {
	int calls;
	int result;
	struct syncmem_held *h;
};

static void acb_cb(void *arg, int result, struct syncmem_held *h)
{
	struct acb *a = arg;

	a->calls++;
	a->result = result;
	a->h = h;
}

/*
 * Run @loop for about @ns: the callbacks it ran (a pending request's own
 * wake-ups, which look again and sleep, count too: a few at most).
 */
static int run_for(struct syncmem_loop *loop, int64_t ns)
{
	int64_t end = now_ns() + ns;
	int ran = 0;

	while (now_ns() < end)
		ran += syncmem_loop_run_once(loop, 10 * MS);
	return ran;
}

/* Run @loop until @a's callback ran (10 s at most): 1 if it did. */
static int run_until(struct syncmem_loop *loop, struct acb *a)
{
	for (int i = 0; i < 1000 && !a->calls; i++)
		syncmem_loop_run_once(loop, 10 * MS);
	return a->calls > 0;
}

TEST_F(locks, async_outcomes_come_through_the_callback_once)
{
	struct syncmem_loop *loop;
	struct acb a = { 0 }, b = { 0 }, c = { 0 };
	char big[SYNCMEM_LOCKS_NAME_MAX + 1];
	uint64_t id = 0;
	pid_t holder;

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	/* Bad arguments: at once, the callback never runs. */
	memset(big, 'n', sizeof(big));
	EXPECT_EQ(-EINVAL, syncmem_locks_request_async(NULL, self->m, "x", 1, 0, acb_cb, &a, &id));
	EXPECT_EQ(-EINVAL, syncmem_locks_request_async(loop, NULL, "x", 1, 0, acb_cb, &a, &id));
	EXPECT_EQ(-EINVAL, syncmem_locks_request_async(loop, self->m, NULL, 1, 0, acb_cb, &a, &id));
	EXPECT_EQ(-EINVAL, syncmem_locks_request_async(loop, self->m, "x", 1, 0, NULL, &a, &id));
	EXPECT_EQ(-EINVAL, syncmem_locks_request_async(loop, self->m, "-x", 2, 0, acb_cb, &a, &id));
	EXPECT_EQ(-EINVAL, syncmem_locks_request_async(loop, self->m, "x", 1, 0x10, acb_cb, &a,
						       &id));
	EXPECT_EQ(-ENAMETOOLONG, syncmem_locks_request_async(loop, self->m, big, sizeof(big), 0,
							     acb_cb, &a, &id));
	EXPECT_EQ(0, syncmem_loop_run_once(loop, 0));
	EXPECT_EQ(0, a.calls);

	/* Free: granted, reported from the loop, not inside the call. */
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "x", 1, 0, acb_cb, &a, NULL));
	EXPECT_EQ(0, a.calls);
	ASSERT_EQ(1, run_until(loop, &a));
	EXPECT_EQ(0, a.result);
	ASSERT_NE(NULL, a.h);
	/* The grant stands: abort says -ENOENT. */
	/* Busy with IF_AVAILABLE: -EBUSY through the callback. */
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "x", 1, SYNCMEM_LOCKS_IF_AVAILABLE,
						 acb_cb, &b, &id));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(loop, id));
	ASSERT_EQ(1, run_until(loop, &b));
	EXPECT_EQ(-EBUSY, b.result);
	EXPECT_EQ(NULL, b.h);
	EXPECT_EQ(0, syncmem_locks_release(a.h));

	/* Queued behind another process; its death is reported. */
	holder = holder_dies(self->m, self->sh, 0, "y", 0, true);
	ASSERT_LT(0, holder);
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "y", 1, SYNCMEM_LOCKS_SHARED,
						 acb_cb, &c, &id));
	EXPECT_GT(3, run_for(loop, 100 * MS));
	EXPECT_EQ(0, c.calls);
	EXPECT_EQ(1, region_waiters(self->r));
	kill(holder, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(holder));
	ASSERT_EQ(1, run_until(loop, &c));
	EXPECT_EQ(-EOWNERDEAD, c.result);
	ASSERT_NE(NULL, c.h);
	EXPECT_EQ(0, syncmem_locks_release(c.h));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(loop, id));
	EXPECT_EQ(-EINVAL, syncmem_locks_abort(NULL, id));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(loop, 123456789));
	syncmem_loop_free(loop);
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(1, b.calls);
	EXPECT_EQ(1, c.calls);
}

TEST_F(locks, abort_a_pending_request)
{
	struct syncmem_loop *loop, *other;
	struct acb a = { 0 }, b = { 0 };
	struct syncmem_held *h;
	uint64_t id = 0, id2 = 0;
	pid_t c;

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_loop_new(&other));
	/* We hold "z" shared; A (ours, exclusive) queues; C (shared) queues behind A. */
	ASSERT_EQ(0, req(self->m, "z", SYNCMEM_LOCKS_SHARED, -1, &h));
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "z", 1, 0, acb_cb, &a, &id));
	EXPECT_NE(0, id);
	ASSERT_EQ(1, await_waiters(self->r, 1));
	c = queue_client(self->r, self->m, self->sh, 1, "z", SYNCMEM_LOCKS_SHARED, 1, 2);
	ASSERT_LT(0, c);
	/* Only its own loop may abort it. */
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(other, id));
	/* Aborted: C, compatible with our share, is granted at once. */
	ASSERT_EQ(0, syncmem_locks_abort(loop, id));
	EXPECT_EQ(0, a.calls);
	EXPECT_EQ(0, wait_exit(c));
	EXPECT_EQ(2, atomic_load(&self->sh->seq));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(loop, id));
	ASSERT_EQ(1, run_until(loop, &a));
	EXPECT_EQ(-ECANCELED, a.result);
	EXPECT_EQ(NULL, a.h);
	EXPECT_EQ(0, syncmem_loop_run_once(loop, 20 * MS));
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(0, region_waiters(self->r));

	/* Granted before its callback ran: abort is -ENOENT, the callback says 0. */
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "z", 1, 0, acb_cb, &b, &id2));
	EXPECT_EQ(0, syncmem_locks_release(h));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(loop, id2));
	ASSERT_EQ(1, run_until(loop, &b));
	EXPECT_EQ(0, b.result);
	ASSERT_NE(NULL, b.h);
	EXPECT_EQ(0, syncmem_locks_release(b.h));
	syncmem_loop_free(other);
	syncmem_loop_free(loop);
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(1, b.calls);
	ASSERT_EQ(0, req(self->m, "z", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

TEST_F(locks, loop_free_ends_pending_requests_once)
{
	struct syncmem_loop *loop;
	struct acb a = { 0 }, b = { 0 };
	struct syncmem_held *h;
	pid_t holder;

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	holder = holder_dies(self->m, self->sh, 0, "f1", 0, true);
	ASSERT_LT(0, holder);
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "f1", 2, 0, acb_cb, &a, NULL));
	/* Granted at once, its callback not run yet. */
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "f2", 2, 0, acb_cb, &b, NULL));
	syncmem_loop_free(loop);
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(-ECANCELED, a.result);
	EXPECT_EQ(1, b.calls);
	EXPECT_EQ(0, b.result);
	ASSERT_NE(NULL, b.h);
	EXPECT_EQ(0, syncmem_locks_release(b.h));
	/* Nothing of the cancelled request stays queued. */
	EXPECT_EQ(0, region_waiters(self->r));
	kill(holder, SIGKILL);
	wait_exit(holder);
	ASSERT_EQ(-EOWNERDEAD, req(self->m, "f1", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

/* Record the arrival of @id (async grants run from the loop). */
struct order_cb {
	struct acb a;
	struct lshared *sh;
	int id;
};

static void order_cb_cb(void *arg, int result, struct syncmem_held *h)
{
	struct order_cb *o = arg;

	acb_cb(&o->a, result, h);
	if (!result)
		arrived(o->sh, o->id);
}

TEST_F(locks, async_keeps_its_place_among_blocking_requests)
{
	struct syncmem_loop *loop;
	struct order_cb o = { .sh = self->sh, .id = 2 };
	struct syncmem_held *h;
	pid_t b, c;

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, req(self->m, "o", 0, -1, &h));
	/* Queued in this order: B (blocking), A (ours, async), C (blocking, shared). */
	b = queue_client(self->r, self->m, self->sh, 1, "o", 0, 20, 1);
	ASSERT_LT(0, b);
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "o", 1, 0, order_cb_cb, &o, NULL));
	ASSERT_EQ(1, await_waiters(self->r, 2));
	c = queue_client(self->r, self->m, self->sh, 3, "o", SYNCMEM_LOCKS_SHARED, 1, 3);
	ASSERT_LT(0, c);
	EXPECT_GT(3, run_for(loop, 100 * MS));
	EXPECT_EQ(0, o.a.calls);
	EXPECT_EQ(0, syncmem_locks_release(h));
	ASSERT_EQ(1, run_until(loop, &o.a));
	ASSERT_EQ(0, o.a.result);
	/* C waits for A's release, though A's process did not block. */
	usleep(30000);
	EXPECT_EQ(3, atomic_load(&self->sh->seq));
	arrived(self->sh, 102);
	EXPECT_EQ(0, syncmem_locks_release(o.a.h));
	EXPECT_EQ(0, wait_exit(b));
	EXPECT_EQ(0, wait_exit(c));
	ASSERT_EQ(6, atomic_load(&self->sh->seq));
	EXPECT_EQ(1, self->sh->order[0]);
	EXPECT_EQ(101, self->sh->order[1]);
	EXPECT_EQ(2, self->sh->order[2]);
	EXPECT_EQ(102, self->sh->order[3]);
	EXPECT_EQ(3, self->sh->order[4]);
	syncmem_loop_free(loop);
	EXPECT_EQ(1, o.a.calls);
}

TEST_F(locks, async_shared_joins_the_shared_group)
{
	struct syncmem_loop *loop;
	struct order_cb o = { .sh = self->sh, .id = 2 };
	struct syncmem_held *h;
	pid_t s, e;

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, req(self->m, "g", 0, -1, &h));
	/* S (blocking shared, holds 300 ms), A (ours, async shared), E (exclusive). */
	s = queue_client(self->r, self->m, self->sh, 1, "g", SYNCMEM_LOCKS_SHARED, 300, 1);
	ASSERT_LT(0, s);
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "g", 1, SYNCMEM_LOCKS_SHARED,
						 order_cb_cb, &o, NULL));
	ASSERT_EQ(1, await_waiters(self->r, 2));
	e = queue_client(self->r, self->m, self->sh, 3, "g", 0, 1, 3);
	ASSERT_LT(0, e);
	EXPECT_EQ(0, syncmem_locks_release(h));
	/* Granted with S, while S still holds it. */
	ASSERT_EQ(1, run_until(loop, &o.a));
	ASSERT_EQ(0, o.a.result);
	/* S was granted too (its process may run after our callback), and still holds it. */
	ASSERT_EQ(1, await_flag(&self->sh->seq, 2));
	EXPECT_EQ(2, atomic_load(&self->sh->seq));
	EXPECT_EQ(0, syncmem_locks_stolen(o.a.h));
	/* E waits for both: S leaves first, then us. */
	ASSERT_EQ(1, await_flag(&self->sh->seq, 3));
	usleep(30000);
	EXPECT_EQ(3, atomic_load(&self->sh->seq));
	arrived(self->sh, 102);
	EXPECT_EQ(0, syncmem_locks_release(o.a.h));
	EXPECT_EQ(0, wait_exit(s));
	EXPECT_EQ(0, wait_exit(e));
	ASSERT_EQ(6, atomic_load(&self->sh->seq));
	EXPECT_EQ(101, self->sh->order[2]);
	EXPECT_EQ(102, self->sh->order[3]);
	EXPECT_EQ(3, self->sh->order[4]);
	syncmem_loop_free(loop);
}

TEST_F(locks, async_steal_and_stolen)
{
	struct syncmem_loop *loop;
	struct acb a = { 0 }, b = { 0 };
	struct syncmem_held *h;
	pid_t holder, w;

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	/* Held by another process, a request queued: an async steal goes ahead of it. */
	holder = fork();
	ASSERT_LE(0, holder);
	if (holder == 0) {
		if (req(self->m, "st", 0, -1, &h))
			_exit(10);
		atomic_store(&self->sh->ready[0], 1);
		await_flag(&self->sh->go, 1);
		if (syncmem_locks_stolen(h) != 1)
			_exit(11);
		_exit(syncmem_locks_release(h) == -ECONNABORTED ? 0 : 12);
	}
	ASSERT_EQ(1, await_flag(&self->sh->ready[0], 1));
	w = queue_client(self->r, self->m, self->sh, 1, "st", 0, 1, 1);
	ASSERT_LT(0, w);
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "st", 2, SYNCMEM_LOCKS_STEAL,
						 acb_cb, &a, NULL));
	ASSERT_EQ(1, run_until(loop, &a));
	ASSERT_EQ(0, a.result);
	atomic_store(&self->sh->go, 1);
	EXPECT_EQ(0, wait_exit(holder));
	usleep(30000);
	EXPECT_EQ(0, atomic_load(&self->sh->seq));
	/* Our async grant is stolen in turn by a blocking steal. */
	ASSERT_EQ(0, req(self->m, "st", SYNCMEM_LOCKS_STEAL, -1, &h));
	EXPECT_EQ(1, syncmem_locks_stolen(a.h));
	EXPECT_EQ(-ECONNABORTED, syncmem_locks_release(a.h));
	/* A pending async request is not a holder: a steal leaves it queued. */
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "st", 2, 0, acb_cb, &b, NULL));
	EXPECT_GT(3, run_for(loop, 100 * MS));
	EXPECT_EQ(0, b.calls);
	EXPECT_EQ(0, syncmem_locks_release(h));
	/* W was ahead of it. */
	EXPECT_EQ(0, wait_exit(w));
	ASSERT_EQ(1, run_until(loop, &b));
	EXPECT_EQ(0, b.result);
	EXPECT_EQ(2, atomic_load(&self->sh->seq));
	EXPECT_EQ(0, syncmem_locks_release(b.h));
	syncmem_loop_free(loop);
}

TEST_F(locks, async_requests_in_query_and_abort)
{
	struct syncmem_lock_info held[4], pending[4];
	size_t nh = 4, np = 4;
	struct syncmem_loop *loop;
	struct acb a = { 0 }, b = { 0 };
	uint64_t me = 0, ida, idb;
	pid_t s;

	ASSERT_EQ(0, syncmem_pool_self_id(&me));
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	s = sitter(self->m, self->sh, 0, "qa", 0);
	ASSERT_EQ(1, await_flag(&self->sh->ready[0], 1));
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "qa", 2, SYNCMEM_LOCKS_SHARED,
						 acb_cb, &a, &ida));
	ASSERT_EQ(0, syncmem_locks_request_async(loop, self->m, "qa", 2, 0, acb_cb, &b, &idb));
	EXPECT_NE(ida, idb);
	ASSERT_EQ(0, syncmem_locks_query(self->m, held, &nh, pending, &np));
	ASSERT_EQ(1, nh);
	ASSERT_EQ(2, np);
	EXPECT_TRUE(info_is(&held[0], "qa", 0, s, self->sh->when[0]));
	EXPECT_TRUE(info_is(&pending[0], "qa", SYNCMEM_LOCKS_SHARED, getpid(), me));
	EXPECT_TRUE(info_is(&pending[1], "qa", 0, getpid(), me));
	/* Aborted: gone from the queue at once, its callback later. */
	ASSERT_EQ(0, syncmem_locks_abort(loop, ida));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(loop, ida));
	nh = np = 4;
	ASSERT_EQ(0, syncmem_locks_query(self->m, held, &nh, pending, &np));
	ASSERT_EQ(1, np);
	EXPECT_TRUE(info_is(&pending[0], "qa", 0, getpid(), me));
	EXPECT_EQ(0, a.calls);
	ASSERT_EQ(1, run_until(loop, &a));
	EXPECT_EQ(-ECANCELED, a.result);
	/* The holder dies: ours is granted and told. */
	kill(s, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(s));
	ASSERT_EQ(1, run_until(loop, &b));
	EXPECT_EQ(-EOWNERDEAD, b.result);
	nh = np = 4;
	ASSERT_EQ(0, syncmem_locks_query(self->m, held, &nh, pending, &np));
	ASSERT_EQ(1, nh);
	EXPECT_EQ(0, np);
	EXPECT_TRUE(info_is(&held[0], "qa", 0, getpid(), me));
	EXPECT_EQ(-ENOENT, syncmem_locks_abort(loop, idb));
	EXPECT_EQ(0, syncmem_locks_release(b.h));
	syncmem_loop_free(loop);
	EXPECT_EQ(1, a.calls);
	EXPECT_EQ(1, b.calls);
}

/* A child whose loop requests @name and sits: holding it (@hold), or queued. */
static pid_t async_sitter(struct syncmem_locks *m, struct lshared *sh, int id, const char *name)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_loop *loop;
		struct acb a = { 0 };

		if (syncmem_loop_new(&loop) ||
		    syncmem_locks_request_async(loop, m, name, strlen(name), 0, acb_cb, &a, NULL))
			_exit(10);
		atomic_store(&sh->ready[id], 1);
		for (;;) {
			syncmem_loop_run_once(loop, 100 * MS);
			if (a.calls)
				atomic_store(&sh->ready[id], a.result ? 3 : 2);
		}
	}
	return pid;
}

TEST_F(locks, killed_async_holders_and_requesters)
{
	struct syncmem_held *h;
	pid_t a, c, k;

	/* A process whose async request is pending dies: it vanishes. */
	ASSERT_EQ(0, req(self->m, "k", 0, -1, &h));
	a = async_sitter(self->m, self->sh, 0, "k");
	ASSERT_LT(0, a);
	ASSERT_EQ(1, await_waiters(self->r, 1));
	c = queue_client(self->r, self->m, self->sh, 1, "k", 0, 1, 2);
	ASSERT_LT(0, c);
	kill(a, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(a));
	EXPECT_EQ(0, syncmem_locks_release(h));
	EXPECT_EQ(0, wait_exit(c));
	EXPECT_EQ(2, atomic_load(&self->sh->seq));
	EXPECT_EQ(0, region_waiters(self->r));

	/* A process holding through its loop dies: the next request is told. */
	k = async_sitter(self->m, self->sh, 2, "k");
	ASSERT_LT(0, k);
	ASSERT_EQ(1, await_flag(&self->sh->ready[2], 2));
	EXPECT_EQ(2, atomic_load(&self->sh->ready[2]));
	EXPECT_EQ(-EBUSY, req(self->m, "k", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h));
	kill(k, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(k));
	ASSERT_EQ(-EOWNERDEAD, req(self->m, "k", 0, 1000 * MS, &h));
	EXPECT_EQ(0, syncmem_locks_release(h));
}

/*
 * The kill torture: workers take three names in random modes (some with
 * timeouts, some IF_AVAILABLE) and check that exclusive holders are alone;
 * the parent kills random workers (holding, waiting or anywhere) and starts
 * new ones. At the end every name is free.
 */
#define TORTURE_WORKERS	6
#define TORTURE_NAMES	3

struct torture {
	_Atomic int inside[TORTURE_NAMES][TORTURE_WORKERS];	/* 0, 'S' or 'E' */
	_Atomic int killed[TORTURE_WORKERS];
	_Atomic int violations;
	_Atomic long grants;
	_Atomic int errors;
	_Atomic int last_error;
};

static void torture_check(struct torture *t, int name, int me, int mode)
{
	for (int w = 0; w < TORTURE_WORKERS; w++) {
		int other = atomic_load(&t->inside[name][w]);

		if (w == me || !other || atomic_load(&t->killed[w]))
			continue;
		if (mode == 'E' || other == 'E')
			atomic_fetch_add(&t->violations, 1);
	}
}

static void torture_worker(struct syncmem_locks *m, struct torture *t, int me, unsigned seed)
{
	static const char *const names[TORTURE_NAMES] = { "alpha", "beta", "gamma" };

	for (;;) {
		int n = rand_r(&seed) % TORTURE_NAMES, mode = rand_r(&seed) % 3 ? 'S' : 'E';
		unsigned flags = mode == 'S' ? SYNCMEM_LOCKS_SHARED : 0;
		int64_t timeout = rand_r(&seed) % 4 ? -1 : (rand_r(&seed) % 20) * MS;
		struct syncmem_held *h;
		int ret;

		if (rand_r(&seed) % 8 == 0)
			flags |= SYNCMEM_LOCKS_IF_AVAILABLE;
		ret = req(m, names[n], flags, timeout, &h);
		if (ret == -ETIMEDOUT || ret == -EBUSY)
			continue;
		if (ret && ret != -EOWNERDEAD) {
			atomic_fetch_add(&t->errors, 1);
			atomic_store(&t->last_error, ret);
			usleep(1000);
			continue;
		}
		atomic_store(&t->inside[n][me], mode);
		torture_check(t, n, me, mode);
		atomic_fetch_add(&t->grants, 1);
		if (rand_r(&seed) % 2)
			usleep(rand_r(&seed) % 2000);
		torture_check(t, n, me, mode);
		atomic_store(&t->inside[n][me], 0);
		if (syncmem_locks_release(h)) {
			atomic_fetch_add(&t->errors, 1);
			atomic_store(&t->last_error, -1000);
		}
	}
}

TEST_F_TIMEOUT(locks, kill_torture, 300)
{
	struct torture *t = (struct torture *)self->sh;
	pid_t pid[TORTURE_WORKERS];
	unsigned seed = 12345;
	int64_t end = now_ns() + 8000 * MS;
	int kills = 0;

	memset(t, 0, sizeof(*t));
	for (int w = 0; w < TORTURE_WORKERS; w++) {
		pid[w] = fork();
		ASSERT_LE(0, pid[w]);
		if (pid[w] == 0)
			torture_worker(self->m, t, w, seed + w);
	}
	while (now_ns() < end) {
		int w = rand_r(&seed) % TORTURE_WORKERS;

		usleep(20000 + rand_r(&seed) % 80000);
		atomic_store(&t->killed[w], 1);
		kill(pid[w], SIGKILL);
		waitpid(pid[w], NULL, 0);
		kills++;
		for (int n = 0; n < TORTURE_NAMES; n++)
			atomic_store(&t->inside[n][w], 0);
		atomic_store(&t->killed[w], 0);
		pid[w] = fork();
		ASSERT_LE(0, pid[w]);
		if (pid[w] == 0)
			torture_worker(self->m, t, w, seed + 100 * kills + w);
	}
	for (int w = 0; w < TORTURE_WORKERS; w++) {
		atomic_store(&t->killed[w], 1);
		kill(pid[w], SIGKILL);
		waitpid(pid[w], NULL, 0);
	}
	TH_LOG("%d kills, %ld grants, %d errors (last %d)", kills, atomic_load(&t->grants),
	       atomic_load(&t->errors), atomic_load(&t->last_error));
	EXPECT_EQ(0, atomic_load(&t->violations));
	EXPECT_EQ(0, atomic_load(&t->errors));
	EXPECT_LT(100, atomic_load(&t->grants));
	/* Every name is free: nothing stays wedged, nothing waits. */
	for (int n = 0; n < TORTURE_NAMES; n++) {
		static const char *const names[TORTURE_NAMES] = { "alpha", "beta", "gamma" };
		struct syncmem_held *h;
		int ret = req(self->m, names[n], SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h);

		EXPECT_TRUE(ret == 0 || ret == -EOWNERDEAD);
		if (ret == 0 || ret == -EOWNERDEAD)
			EXPECT_EQ(0, syncmem_locks_release(h));
	}
	EXPECT_EQ(0, region_waiters(self->r));
}

/*
 * A process killed at any instruction of the fast paths (request and
 * release of one name, shared and exclusive in turn, with no queue to
 * send it to the mutex) leaves nothing held: the next request with
 * IF_AVAILABLE is granted (-EOWNERDEAD when it died holding it
 * exclusively), and query shows nothing of it.
 */
TEST_F(locks, killed_inside_the_fast_path)
{
	unsigned int seed = 2026;

	for (int round = 0; round < 40; round++) {
		struct syncmem_lock_info held[4], pending[4];
		size_t nh = 4, np = 4;
		struct syncmem_held *h;
		pid_t pid;
		int ret;

		atomic_store(&self->sh->go, 0);
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			for (unsigned int i = 0;; i++) {
				if (req(self->m, "fast", i & 1 ? SYNCMEM_LOCKS_SHARED : 0, -1, &h) ||
				    syncmem_locks_release(h))
					_exit(1);
				if (i == 64)
					atomic_store(&self->sh->go, 1);
			}
		}
		ASSERT_EQ(1, await_flag(&self->sh->go, 1));
		usleep(rand_r(&seed) % 3000);
		kill(pid, SIGKILL);
		ASSERT_EQ(128 + SIGKILL, wait_exit(pid));
		ret = req(self->m, "fast", SYNCMEM_LOCKS_IF_AVAILABLE, -1, &h);
		ASSERT_TRUE(ret == 0 || ret == -EOWNERDEAD)
			TH_LOG("round %d: %d", round, ret);
		ASSERT_EQ(0, syncmem_locks_query(self->m, held, &nh, pending, &np));
		EXPECT_EQ(1, nh);
		EXPECT_EQ(0, np);
		EXPECT_EQ(getpid(), held[0].pid);
		ASSERT_EQ(0, syncmem_locks_release(h));
	}
}

/*
 * A peer scribbles the manager: whatever it wrote, the calls of a victim
 * return (an error or not) without a fault, a hang or a write outside the
 * manager.
 */
TEST_F_TIMEOUT(locks, scribbled_manager, 300)
{
	uint8_t *after = self->at + self->size;
	size_t after_len = REGION_SIZE - MGR_OFF - self->size;
	unsigned seed = 4242;

	for (int round = 0; round < 40; round++) {
		struct syncmem_held *h[4] = { 0 };
		pid_t pid;
		int st;

		/* Some state to scribble over: held and queued names. */
		for (int i = 0; i < 3; i++)
			req(self->m, i ? "b" : "a", i == 2 ? SYNCMEM_LOCKS_SHARED : 0, 0, &h[i]);
		memset(after, 0xa5, after_len);
		memset(self->sh, 0x5a, sizeof(*self->sh));
		for (int k = 0; k < 1 + round % 8; k++) {
			size_t off = rand_r(&seed) % self->size, len = 1 + rand_r(&seed) % 64;

			if (off + len > self->size)
				len = self->size - off;
			for (size_t i = 0; i < len; i++)
				self->at[off + i] = (uint8_t)rand_r(&seed);
		}
		pid = fork();
		ASSERT_LE(0, pid);
		if (pid == 0) {
			struct syncmem_locks *m2;
			struct syncmem_held *x;

			alarm(60);
			if (!syncmem_locks_attach(self->r, self->at, &m2))
				syncmem_locks_detach(m2);
			for (int i = 0; i < 6; i++) {
				const char *n = i % 3 == 0 ? "a" : i % 3 == 1 ? "b" : "c";

				if (!req(self->m, n, i & 1 ? SYNCMEM_LOCKS_SHARED : 0, 20 * MS, &x))
					syncmem_locks_release(x);
				if (!req(self->m, n, SYNCMEM_LOCKS_IF_AVAILABLE, -1, &x))
					syncmem_locks_release(x);
				if (!req(self->m, n, SYNCMEM_LOCKS_STEAL, -1, &x))
					syncmem_locks_release(x);
			}
			_exit(0);
		}
		st = wait_exit(pid);
		EXPECT_EQ(0, st);
		for (int i = 0; i < 3; i++)
			if (h[i])
				syncmem_locks_release(h[i]);
		for (size_t i = 0; i < after_len; i++)
			if (after[i] != 0xa5) {
				EXPECT_EQ(0xa5, after[i]);
				break;
			}
		for (size_t i = 0; i < sizeof(*self->sh); i++)
			if (((uint8_t *)self->sh)[i] != 0x5a) {
				EXPECT_EQ(0x5a, ((uint8_t *)self->sh)[i]);
				break;
			}
		if (st)
			break;
		/* A fresh manager for the next round. */
		syncmem_locks_detach(self->m);
		memset(self->at, 0, self->size);
		ASSERT_EQ(0, syncmem_locks_init(self->r, self->at, self->size, &self->m));
	}
	/* A scribbled identity is no manager. */
	self->at[0] ^= 0xff;
	{
		struct syncmem_locks *m2;

		EXPECT_EQ(-EPROTO, syncmem_locks_attach(self->r, self->at, &m2));
	}
	self->at[0] ^= 0xff;
}

TEST_HARNESS_MAIN
