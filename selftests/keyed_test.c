// SPDX-License-Identifier: GPL-2.0
/*
 * Keyed locks across processes: per-key exclusion, independent keys, FIFO
 * per key with blocking and async lockers, entries reclaimed, a full table,
 * nothing left by lockers and holders that die, multi-part keys, execute,
 * every errno.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define NKEYS		3
#define TABLE_ENTRIES	16

struct kshared {
	_Atomic int32_t inside[NKEYS];
	uint64_t counter[NKEYS];	/* protected by the key's lock */
	_Atomic uint32_t violations;
	_Atomic uint32_t seq;
	uint32_t order[64];
	uint8_t table[] __attribute__((aligned(64)));
};

FIXTURE(keyed) {
	struct syncmem_region *r;
	struct kshared *sh;
	struct syncmem_keyed *k;
};

FIXTURE_SETUP(keyed)
{
	size_t len = syncmem_keyed_footprint(TABLE_ENTRIES);

	ASSERT_LT(0, len);
	ASSERT_EQ(0, syncmem_open(NULL, 65536, 0, 0, &self->r));
	self->sh = syncmem_base(self->r);
	ASSERT_EQ(0, syncmem_keyed_init(self->sh->table, len, TABLE_ENTRIES, &self->k));
}

FIXTURE_TEARDOWN(keyed)
{
	syncmem_close(self->r);
}

static const char *const key_names[NKEYS] = { "alpha", "beta", "gamma" };

static void section(struct kshared *sh, int key)
{
	if (atomic_fetch_add(&sh->inside[key], 1))
		atomic_fetch_add(&sh->violations, 1);
	sh->counter[key]++;
	sched_yield();
	atomic_fetch_sub(&sh->inside[key], 1);
}

struct kasync {
	struct syncmem_loop *loop;
	struct syncmem_region *r;
	struct syncmem_keyed *k;
	struct kshared *sh;
	unsigned int seed;
	int key;
	int left;
	int errors;
};

static void kasync_locked(void *arg, int result);

static int kasync_next(struct kasync *a)
{
	a->key = (int)(rand_r(&a->seed) % NKEYS);
	return syncmem_keyed_lock_async(a->loop, a->r, a->k, key_names[a->key],
					strlen(key_names[a->key]), kasync_locked, a);
}

static void kasync_locked(void *arg, int result)
{
	struct kasync *a = arg;

	if (result) {
		a->errors++;
		return;
	}
	section(a->sh, a->key);
	if (syncmem_keyed_unlock(a->r, a->k, key_names[a->key], strlen(key_names[a->key])))
		a->errors++;
	if (--a->left > 0 && kasync_next(a))
		a->errors++;
}

static int keyed_worker(struct syncmem_region *r, struct syncmem_keyed *k, struct kshared *sh,
			int id, int n)
{
	unsigned int seed = (unsigned int)id * 31u + 7u;

	if (id % 2) {
		struct kasync a = { .r = r, .k = k, .sh = sh, .seed = seed, .left = n };

		if (syncmem_loop_new(&a.loop) || kasync_next(&a) || syncmem_loop_run(a.loop))
			return 20;
		syncmem_loop_free(a.loop);
		return a.errors || a.left ? 21 : 0;
	}
	for (int i = 0; i < n; i++) {
		int key = (int)(rand_r(&seed) % NKEYS);
		size_t len = strlen(key_names[key]);

		if (syncmem_keyed_lock(r, k, key_names[key], len, SYNCMEM_FOREVER))
			return 22;
		section(sh, key);
		if (syncmem_keyed_unlock(r, k, key_names[key], len))
			return 23;
	}
	return 0;
}

TEST_F_TIMEOUT(keyed, per_key_exclusion_blocking_and_async, 600)
{
	enum { N = 6, EACH = 1000 };
	pid_t pids[N];
	uint64_t total = 0;

	for (int i = 0; i < N; i++) {
		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(keyed_worker(self->r, self->k, self->sh, i, EACH));
	}
	for (int i = 0; i < N; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	for (int key = 0; key < NKEYS; key++)
		total += self->sh->counter[key];
	EXPECT_EQ((uint64_t)N * EACH, total);
	EXPECT_EQ(0, atomic_load(&self->sh->violations));
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));	/* nothing left held */
	EXPECT_EQ(0, region_waiters(self->r));
}

TEST_F(keyed, different_keys_are_independent)
{
	int held[2], done[2];
	pid_t pid;
	char c;

	ASSERT_EQ(0, pipe(held));
	ASSERT_EQ(0, pipe(done));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0) {
		if (syncmem_keyed_lock(self->r, self->k, "x", 1, SYNCMEM_FOREVER))
			_exit(1);
		if (write(held[1], "h", 1) != 1 || read(done[0], &c, 1) != 1)
			_exit(2);
		_exit(syncmem_keyed_unlock(self->r, self->k, "x", 1) ? 3 : 0);
	}
	ASSERT_EQ(1, read(held[0], &c, 1));
	EXPECT_EQ(-EBUSY, syncmem_keyed_trylock(self->r, self->k, "x", 1));
	EXPECT_EQ(-ETIMEDOUT, syncmem_keyed_lock(self->r, self->k, "x", 1, 20000000));
	EXPECT_EQ(0, syncmem_keyed_trylock(self->r, self->k, "y", 1));
	EXPECT_EQ(0, syncmem_keyed_trylock(self->r, self->k, "xx", 2));
	EXPECT_EQ(3, syncmem_keyed_held(self->r, self->k));
	/* Not ours: -EPERM, and the entry stays. */
	EXPECT_EQ(-EPERM, syncmem_keyed_unlock(self->r, self->k, "x", 1));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "y", 1));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "xx", 2));
	EXPECT_EQ(1, syncmem_keyed_held(self->r, self->k));
	ASSERT_EQ(1, write(done[1], "d", 1));
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));
	/* Their entries stay, for the keys' next lockers. */
	EXPECT_EQ(3, syncmem_keyed_in_use(self->k));
}

struct korder {
	struct syncmem_region *r;
	struct syncmem_keyed *k;
	struct kshared *sh;
	uint32_t id;
};

static void korder_locked(void *arg, int result)
{
	struct korder *o = arg;

	if (result)
		return;
	o->sh->order[atomic_fetch_add(&o->sh->seq, 1)] = o->id;
	syncmem_keyed_unlock(o->r, o->k, "fifo", 4);
}

static int korder_waiter(struct korder *o)
{
	struct syncmem_loop *loop;

	if (o->id % 2 == 0) {
		if (syncmem_keyed_lock(o->r, o->k, "fifo", 4, SYNCMEM_FOREVER))
			return 30;
		korder_locked(o, 0);
		return 0;
	}
	if (syncmem_loop_new(&loop) ||
	    syncmem_keyed_lock_async(loop, o->r, o->k, "fifo", 4, korder_locked, o) ||
	    syncmem_loop_run(loop))
		return 31;
	syncmem_loop_free(loop);
	return 0;
}

TEST_F(keyed, one_key_grants_in_arrival_order)
{
	enum { N = 8 };
	pid_t pids[N];

	ASSERT_EQ(0, syncmem_keyed_lock(self->r, self->k, "fifo", 4, SYNCMEM_FOREVER));
	for (int i = 0; i < N; i++) {
		struct korder o = { self->r, self->k, self->sh, (uint32_t)i };

		pids[i] = fork();
		ASSERT_LE(0, pids[i]);
		if (pids[i] == 0)
			_exit(korder_waiter(&o));
		ASSERT_TRUE(await_waiters(self->r, i + 1));
	}
	EXPECT_EQ(1, syncmem_keyed_held(self->r, self->k));	/* one entry for all of them */
	ASSERT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "fifo", 4));
	for (int i = 0; i < N; i++)
		EXPECT_EQ(0, wait_exit(pids[i]));
	for (int i = 0; i < N; i++)
		EXPECT_EQ((uint32_t)i, self->sh->order[i]);
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));
}

TEST_F(keyed, a_full_table_is_enospc_until_an_entry_is_reclaimed)
{
	char key[8];

	for (int i = 0; i < TABLE_ENTRIES; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		ASSERT_EQ(0, syncmem_keyed_lock(self->r, self->k, key, strlen(key), 0));
	}
	EXPECT_EQ(TABLE_ENTRIES, syncmem_keyed_held(self->r, self->k));
	EXPECT_EQ(-ENOSPC, syncmem_keyed_lock(self->r, self->k, "extra", 5, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "k3", 2));
	EXPECT_EQ(0, syncmem_keyed_lock(self->r, self->k, "extra", 5, 0));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "extra", 5));
	for (int i = 0; i < TABLE_ENTRIES; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		if (i != 3)
			EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, key, strlen(key)));
	}
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));
}

static void bump(void *arg)
{
	(*(int *)arg)++;
}

static void async_held(void *arg, int result)
{
	*(int *)arg = result;
}

/* A child that locks @key (blocking or async) and waits to be killed. */
static pid_t locker_child(struct syncmem_region *r, struct syncmem_keyed *k, const char *key,
			  int async)
{
	pid_t pid = fork();

	if (pid == 0) {
		struct syncmem_loop *loop;
		int result = 1;

		if (!async) {
			syncmem_keyed_lock(r, k, key, strlen(key), SYNCMEM_FOREVER);
			for (;;)
				pause();
		}
		if (syncmem_loop_new(&loop) ||
		    syncmem_keyed_lock_async(loop, r, k, key, strlen(key), async_held, &result))
			_exit(1);
		for (;;)
			syncmem_loop_run_once(loop, SYNCMEM_FOREVER);
	}
	return pid;
}

TEST_F_TIMEOUT(keyed, lockers_and_holders_that_die_leave_nothing_behind, 120)
{
	pid_t waiters[2], holder;

	/* Two waiters (blocking and async) die in the queue of a held key. */
	ASSERT_EQ(0, syncmem_keyed_trylock(self->r, self->k, "k", 1));
	for (int i = 0; i < 2; i++) {
		waiters[i] = locker_child(self->r, self->k, "k", i);
		ASSERT_LT(0, waiters[i]);
		ASSERT_TRUE(await_waiters(self->r, (uint64_t)i + 1));
	}
	for (int i = 0; i < 2; i++) {
		kill(waiters[i], SIGKILL);
		EXPECT_EQ(128 + SIGKILL, wait_exit(waiters[i]));
	}
	EXPECT_TRUE(await_waiters(self->r, 0));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "k", 1));
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));	/* nothing left held or waited */

	/* Holders that die while nobody waits: their entries do not fill the table. */
	for (int i = 0; i < TABLE_ENTRIES; i++) {
		char key[16];

		snprintf(key, sizeof(key), "dead-%d", i);
		holder = locker_child(self->r, self->k, key, i % 2);
		ASSERT_LT(0, holder);
		while (syncmem_keyed_held(self->r, self->k) < i + 1)
			usleep(1000);
		usleep(10000);	/* the async one's callback ran: it holds the key */
		kill(holder, SIGKILL);
		EXPECT_EQ(128 + SIGKILL, wait_exit(holder));
	}
	EXPECT_EQ(TABLE_ENTRIES, syncmem_keyed_held(self->r, self->k));
	/* A dead holder's key goes to its next locker, told so. */
	EXPECT_EQ(-EOWNERDEAD, syncmem_keyed_trylock(self->r, self->k, "dead-0", 6));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "dead-0", 6));
	EXPECT_EQ(TABLE_ENTRIES - 1, syncmem_keyed_held(self->r, self->k));
	/* A new key in a table full of the dead: swept, not -ENOSPC. */
	EXPECT_EQ(0, syncmem_keyed_trylock(self->r, self->k, "x", 1));
	EXPECT_EQ(0, syncmem_keyed_trylock(self->r, self->k, "y", 1));
	EXPECT_EQ(2, syncmem_keyed_held(self->r, self->k));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "x", 1));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "y", 1));
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));
}

TEST_F(keyed, multi_part_keys_and_execute)
{
	uint8_t a[SYNCMEM_KEY_MAX], b[SYNCMEM_KEY_MAX], big[SYNCMEM_KEY_MAX + 1];
	uint32_t user = 42;
	struct syncmem_key_part ab_c[] = { SYNCMEM_KEY_STR("ab"), SYNCMEM_KEY_STR("c") };
	struct syncmem_key_part a_bc[] = { SYNCMEM_KEY_STR("a"), SYNCMEM_KEY_STR("bc") };
	struct syncmem_key_part mixed[] = { SYNCMEM_KEY_STR("user"), SYNCMEM_KEY_VAL(user) };
	struct syncmem_key_part huge[] = { { big, sizeof(big) } };
	struct syncmem_loop *loop;
	int la, lb, runs = 0;

	la = syncmem_key_build(a, sizeof(a), ab_c, 2);
	lb = syncmem_key_build(b, sizeof(b), a_bc, 2);
	ASSERT_EQ(7, la);
	ASSERT_EQ(7, lb);
	EXPECT_NE(0, memcmp(a, b, 7));
	EXPECT_EQ(12, syncmem_key_build(a, sizeof(a), mixed, 2));	/* 2+4 and 2+4 */
	memset(big, 1, sizeof(big));
	EXPECT_EQ(-E2BIG, syncmem_key_build(a, sizeof(a), huge, 1));
	EXPECT_EQ(-E2BIG, syncmem_key_build(a, 6, ab_c, 2));
	EXPECT_EQ(-EINVAL, syncmem_key_build(NULL, 8, ab_c, 2));

	/* The two keys are different locks. */
	ASSERT_EQ(0, syncmem_keyed_lock(self->r, self->k, a, (size_t)la, 0));
	EXPECT_EQ(0, syncmem_keyed_trylock(self->r, self->k, b, (size_t)lb));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, b, (size_t)lb));

	/* execute: runs later from the loop, with the key held, then releases it. */
	ASSERT_EQ(0, syncmem_loop_new(&loop));
	ASSERT_EQ(0, syncmem_keyed_execute(loop, self->r, self->k, "run", 3, bump, &runs));
	EXPECT_EQ(0, runs);
	EXPECT_EQ(0, syncmem_loop_run(loop));
	EXPECT_EQ(1, runs);
	EXPECT_EQ(0, syncmem_keyed_trylock(self->r, self->k, "run", 3));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "run", 3));
	syncmem_loop_free(loop);
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, a, (size_t)la));
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));
}

static void *unlock_from_thread(void *arg)
{
	void **a = arg;

	return (void *)(intptr_t)syncmem_keyed_unlock(a[0], a[1], "t", 1);
}

/* The chain locks of @k and their number (keytab.h's layout: right before the entries). */
static struct syncmem_lock *stripes_of(struct syncmem_keyed *k, uint32_t *n)
{
	*n = k->t.nbuckets < 16 ? k->t.nbuckets : 16;
	return (struct syncmem_lock *)((char *)&k->t + k->t.entries_off) - *n;
}

/* Wait up to 10 s until @n threads wait on the @nlocks locks at @l: true then. */
static bool await_lock_waiters(struct syncmem_region *r, struct syncmem_lock *l,
			       uint32_t nlocks, int n)
{
	for (int tries = 0; tries < 10000; tries++) {
		int sum = 0;

		for (uint32_t i = 0; i < nlocks; i++) {
			int w = syncmem_waiters(r, &l[i].word, NULL, 0);

			sum += w > 0 ? w : 0;
		}
		if (sum == n)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * A locker of a new key killed after it took a free entry and before it
 * linked it (held up on its chain's lock meanwhile) leaves no entry
 * behind: every entry of the table can still be held at once.
 */
TEST_F_TIMEOUT(keyed, a_locker_killed_between_taking_an_entry_and_linking_it_leaks_nothing, 120)
{
	struct syncmem_lock *table = &self->k->t.lock, *stripes;
	uint32_t nstripes;
	pid_t pid;

	stripes = stripes_of(self->k, &nstripes);
	ASSERT_EQ(0, syncmem_lock(self->r, table));
	pid = fork();
	ASSERT_LE(0, pid);
	if (pid == 0)
		_exit(syncmem_keyed_lock(self->r, self->k, "new", 3, SYNCMEM_FOREVER) ? 1 : 2);
	/* Held up on the table lock, before it takes an entry. */
	ASSERT_TRUE(await_lock_waiters(self->r, table, 1, 1));
	for (uint32_t i = 0; i < nstripes; i++)
		ASSERT_EQ(0, syncmem_lock(self->r, &stripes[i]));
	ASSERT_EQ(0, syncmem_unlock(self->r, table));
	/* It took an entry and waits for its chain's lock to link it. */
	ASSERT_TRUE(await_lock_waiters(self->r, stripes, nstripes, 1));
	kill(pid, SIGKILL);
	EXPECT_EQ(128 + SIGKILL, wait_exit(pid));
	for (uint32_t i = 0; i < nstripes; i++)
		ASSERT_EQ(0, syncmem_unlock(self->r, &stripes[i]));
	/* Every entry, held at once. */
	for (int i = 0; i < TABLE_ENTRIES; i++) {
		char key[16];
		int n = snprintf(key, sizeof(key), "entry-%d", i);

		EXPECT_EQ(0, syncmem_keyed_lock(self->r, self->k, key, (size_t)n,
						5000000000LL)) {
			TH_LOG("key %d of %d", i + 1, TABLE_ENTRIES);
		}
	}
	EXPECT_EQ(TABLE_ENTRIES, syncmem_keyed_held(self->r, self->k));
	for (int i = 0; i < TABLE_ENTRIES; i++) {
		char key[16];
		int n = snprintf(key, sizeof(key), "entry-%d", i);

		syncmem_keyed_unlock(self->r, self->k, key, (size_t)n);
	}
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));
}

TEST_F(keyed, errors)
{
	size_t len = syncmem_keyed_footprint(TABLE_ENTRIES);
	uint8_t key[SYNCMEM_KEY_MAX + 1] = { 0 };
	void *args[2] = { self->r, self->k }, *ret;
	struct syncmem_keyed *other;
	struct syncmem_loop *loop;
	pthread_t t;

	EXPECT_EQ(-EPERM, syncmem_keyed_unlock(self->r, self->k, "none", 4));
	ASSERT_EQ(0, syncmem_keyed_lock(self->r, self->k, "t", 1, 0));
	EXPECT_EQ(-EDEADLK, syncmem_keyed_lock(self->r, self->k, "t", 1, SYNCMEM_FOREVER));
	ASSERT_EQ(0, pthread_create(&t, NULL, unlock_from_thread, args));
	pthread_join(t, &ret);
	EXPECT_EQ(-EPERM, (int)(intptr_t)ret);
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, "t", 1));
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));

	EXPECT_EQ(-EINVAL, syncmem_keyed_lock(self->r, self->k, "", 0, 0));
	EXPECT_EQ(-EINVAL, syncmem_keyed_lock(self->r, self->k, NULL, 1, 0));
	EXPECT_EQ(-E2BIG, syncmem_keyed_lock(self->r, self->k, key, sizeof(key), 0));
	EXPECT_EQ(0, syncmem_keyed_lock(self->r, self->k, key, SYNCMEM_KEY_MAX, 0));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->r, self->k, key, SYNCMEM_KEY_MAX));
	EXPECT_EQ(-EINVAL, syncmem_keyed_lock(NULL, self->k, "a", 1, 0));

	/* Init and attach. */
	EXPECT_EQ(0, syncmem_keyed_footprint(0));
	EXPECT_EQ(-EEXIST, syncmem_keyed_init(self->sh->table, len, TABLE_ENTRIES, &other));
	EXPECT_EQ(-EINVAL, syncmem_keyed_init(self->sh->table + 8, len, TABLE_ENTRIES, &other));
	EXPECT_EQ(-EINVAL, syncmem_keyed_init(self->sh->table + len, len - 1, TABLE_ENTRIES,
					      &other));
	EXPECT_EQ(-EINVAL, syncmem_keyed_init(self->sh->table + len, len, 0, &other));
	EXPECT_EQ(-EPROTO, syncmem_keyed_attach(self->sh->table + 16384, len, &other));
	EXPECT_EQ(0, syncmem_keyed_attach(self->sh->table, len, &other));
	EXPECT_EQ(self->k, other);
	EXPECT_EQ(-EINVAL, syncmem_keyed_attach(self->sh->table, 64, &other));
	/* A keyed table is not a flight table. */
	EXPECT_EQ(-EPROTO, syncmem_flight_attach(self->r, self->sh->table, len,
						 (struct syncmem_flight **)&other));

	ASSERT_EQ(0, syncmem_loop_new(&loop));
	EXPECT_EQ(-EINVAL, syncmem_keyed_lock_async(loop, self->r, self->k, "a", 1, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_keyed_execute(loop, self->r, self->k, "a", 1, NULL, NULL));
	EXPECT_EQ(-EINVAL, syncmem_keyed_execute(NULL, self->r, self->k, "a", 1, bump, NULL));
	syncmem_loop_free(loop);
	EXPECT_EQ(0, syncmem_keyed_held(self->r, self->k));
	EXPECT_EQ(-EINVAL, syncmem_keyed_held(self->r, NULL));
	EXPECT_EQ(-EINVAL, syncmem_keyed_held(NULL, self->k));
}

TEST_HARNESS_MAIN
