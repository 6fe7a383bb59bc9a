// SPDX-License-Identifier: GPL-2.0
/*
 * The library on a region mapped read-only: calls that would write it
 * answer -EBADF instead of dying of SIGSEGV; waits (reads) still work. The
 * victim runs in a child, so a fault or a hang shows as its exit status.
 * (The hostile-peer tests that need no kernel are in tests/host.)
 */
#define _GNU_SOURCE
#include <signal.h>
#include <sys/ioctl.h>

#include "kselftest_harness.h"
#include "syncmem_test.h"

#define MS	1000000LL

struct objects {
	struct syncmem_lock lock;
	struct syncmem_gate gate;
	struct syncmem_sem sem;
	struct syncmem_rwlock rw;
	uint8_t pool[] __attribute__((aligned(64)));
};

#define POOL_BLOCKS	8
#define REGION_SIZE	65536

#define ENTRIES		4

FIXTURE(hostile) {
	char name[64];
	struct syncmem_region *rw;	/* read-write */
	struct syncmem_region *ro;	/* the same region, read-only */
	struct objects *o;		/* in rw */
	struct objects *ro_o;		/* the same objects, in ro */
	struct syncmem_pool *pool;
	struct syncmem_keyed *k;	/* after the pool */
	struct syncmem_flight *f;	/* after the keyed table */
};

/* The keyed table, then the flight table, after the pool of @o. */
static uint8_t *keyed_table(struct objects *o)
{
	return o->pool + syncmem_pool_footprint(64, POOL_BLOCKS);
}

static uint8_t *flight_table(struct objects *o)
{
	return keyed_table(o) + syncmem_keyed_footprint(ENTRIES);
}

FIXTURE_SETUP(hostile)
{
	size_t pool_len = syncmem_pool_footprint(64, POOL_BLOCKS);
	size_t table_len = syncmem_keyed_footprint(ENTRIES);

	snprintf(self->name, sizeof(self->name), "hostile-test-%d", getpid());
	ASSERT_EQ(0, syncmem_open(self->name, REGION_SIZE, SYNCMEM_CREATE | SYNCMEM_EXCL, 0600,
				  &self->rw));
	ASSERT_EQ(0, syncmem_open(self->name, 0, SYNCMEM_RDONLY, 0, &self->ro));
	syncmem_unlink(self->name);
	self->o = syncmem_base(self->rw);
	self->ro_o = syncmem_base(self->ro);
	syncmem_lock_init(&self->o->lock, 0);
	syncmem_gate_init(&self->o->gate, true);
	ASSERT_EQ(0, syncmem_sem_init(&self->o->sem, 1));
	syncmem_rwlock_init(&self->o->rw);
	ASSERT_EQ(0, syncmem_pool_init(self->o->pool, pool_len, 64, POOL_BLOCKS, &self->pool));
	ASSERT_EQ(0, syncmem_keyed_init(keyed_table(self->o), table_len, ENTRIES, &self->k));
	ASSERT_EQ(0, syncmem_flight_init(self->rw, flight_table(self->o), table_len, ENTRIES,
					 self->pool, &self->f));
}

FIXTURE_TEARDOWN(hostile)
{
	syncmem_pool_detach(self->pool);
	syncmem_close(self->ro);
	syncmem_close(self->rw);
}

static void never_called(void *arg, int result)
{
	(void)arg;
	(void)result;
	_exit(99);
}

static void never_run(void *arg)
{
	(void)arg;
	_exit(98);
}

static int never_computed(void *arg, void *out, size_t cap, size_t *len)
{
	(void)arg;
	(void)out;
	(void)cap;
	(void)len;
	_exit(97);
}

static void never_delivered(void *arg, int result, const void *data, size_t len)
{
	(void)arg;
	(void)result;
	(void)data;
	(void)len;
	_exit(96);
}

/* Exit status 0 when every writing call on the read-only region is -EBADF. */
static int read_only_calls(struct syncmem_region *ro, struct objects *o)
{
	size_t pool_len = syncmem_pool_footprint(64, POOL_BLOCKS);
	size_t table_len = syncmem_keyed_footprint(ENTRIES);
	struct syncmem_keyed *k;
	struct syncmem_flight *f;
	struct syncmem_loop *loop;
	struct syncmem_pool *pool;
	uint32_t off;
	char out[16];
	int step = 0;

#define EXPECT_RO(call) do { step++; if ((call) != -EBADF) return step; } while (0)
	if (syncmem_loop_new(&loop))
		return 100;
	EXPECT_RO(syncmem_lock(ro, &o->lock));
	EXPECT_RO(syncmem_lock_timed(ro, &o->lock, MS));
	EXPECT_RO(syncmem_trylock(ro, &o->lock));
	EXPECT_RO(syncmem_unlock(ro, &o->lock));
	EXPECT_RO(syncmem_lock_async(loop, ro, &o->lock, never_called, NULL));
	EXPECT_RO(syncmem_execute_locked(loop, ro, &o->lock, never_run, NULL));
	EXPECT_RO(syncmem_gate_wait(ro, &o->gate, MS));
	EXPECT_RO(syncmem_gate_wait_async(loop, ro, &o->gate, never_called, NULL));
	EXPECT_RO(syncmem_gate_signal(ro, &o->gate));
	EXPECT_RO(syncmem_sem_wait(ro, &o->sem));
	EXPECT_RO(syncmem_sem_timedwait(ro, &o->sem, MS));
	EXPECT_RO(syncmem_sem_trywait(ro, &o->sem));
	EXPECT_RO(syncmem_sem_wait_async(loop, ro, &o->sem, never_called, NULL));
	EXPECT_RO(syncmem_sem_post(ro, &o->sem));
	EXPECT_RO(syncmem_rwlock_rdlock(ro, &o->rw));
	EXPECT_RO(syncmem_rwlock_rdlock_timed(ro, &o->rw, MS));
	EXPECT_RO(syncmem_rwlock_tryrdlock(ro, &o->rw));
	EXPECT_RO(syncmem_rwlock_wrlock(ro, &o->rw));
	EXPECT_RO(syncmem_rwlock_wrlock_timed(ro, &o->rw, MS));
	EXPECT_RO(syncmem_rwlock_trywrlock(ro, &o->rw));
	EXPECT_RO(syncmem_rwlock_rdlock_async(loop, ro, &o->rw, never_called, NULL));
	EXPECT_RO(syncmem_rwlock_wrlock_async(loop, ro, &o->rw, never_called, NULL));
	EXPECT_RO(syncmem_rwlock_unlock(ro, &o->rw));
	EXPECT_RO(syncmem_notify(ro, &o->gate.word, 1));
	EXPECT_RO(syncmem_handoff64(ro, &o->gate.word, 1));
	/* A pool attached through the read-only mapping. */
	if (syncmem_pool_attach(o->pool, pool_len, &pool))
		return 101;
	if (syncmem_pool_alloc(pool) || syncmem_pool_free_count(pool) != POOL_BLOCKS)
		return 102;
	EXPECT_RO(syncmem_pool_alloc_checked(pool, &off));
	EXPECT_RO(syncmem_pool_free(pool, (uint32_t)(pool_len - 64)));
	/* Keyed locks and single-flight: the tables attach (reading), calls are -EBADF. */
	if (syncmem_keyed_attach(keyed_table(o), table_len, &k) ||
	    syncmem_flight_attach(ro, flight_table(o), table_len, &f))
		return 105;
	EXPECT_RO(syncmem_keyed_lock(ro, k, "key", 3, MS));
	EXPECT_RO(syncmem_keyed_trylock(ro, k, "key", 3));
	EXPECT_RO(syncmem_keyed_unlock(ro, k, "key", 3));
	EXPECT_RO(syncmem_keyed_lock_async(loop, ro, k, "key", 3, never_called, NULL));
	EXPECT_RO(syncmem_keyed_execute(loop, ro, k, "key", 3, never_run, NULL));
	EXPECT_RO(syncmem_flight_do(ro, f, "key", 3, never_computed, NULL, out, sizeof(out)));
	EXPECT_RO(syncmem_flight_do_async(loop, ro, f, "key", 3, never_computed, NULL,
					  never_delivered, NULL));
	EXPECT_RO(syncmem_flight_init(ro, flight_table(o) + table_len, table_len, ENTRIES, pool,
				      &f));
	EXPECT_RO(syncmem_keyed_init(keyed_table(o) + 2 * table_len, table_len, ENTRIES, &k));
	syncmem_pool_detach(pool);
#undef EXPECT_RO
	/* Waiting is reading: allowed. */
	if (syncmem_wait64(ro, &o->gate.word, 1, 0) != SYNCMEM_NOT_EQUAL)
		return 103;
	if (syncmem_loop_pending(loop))
		return 104;
	syncmem_loop_free(loop);
	return 0;
}

TEST_F(hostile, read_only_region_writes_are_ebadf_not_sigsegv)
{
	pid_t pid = fork();

	ASSERT_LE(0, pid);
	if (!pid) {
		alarm(60);
		_exit(read_only_calls(self->ro, self->ro_o));
	}
	EXPECT_EQ(0, wait_exit(pid));
	/* Nothing changed: the lock free, the gate open, one unit. */
	EXPECT_EQ(0, self->o->lock.word);
	EXPECT_EQ(0, self->o->gate.word);
	EXPECT_EQ(1, syncmem_sem_value(&self->o->sem));
	EXPECT_EQ(POOL_BLOCKS, syncmem_pool_free_count(self->pool));
}

/*
 * The init functions on the read-only mapping: the void ones change
 * nothing, the others answer -EBADF (and the pool, key and single-flight
 * tables too); none dies of SIGSEGV. Then every other call that writes:
 * -EBADF.
 */
static int read_only_inits(struct syncmem_region *ro, struct objects *o)
{
	size_t pool_len = syncmem_pool_footprint(64, POOL_BLOCKS);
	size_t table_len = syncmem_keyed_footprint(ENTRIES);
	uint8_t *spare = flight_table(o) + 2 * table_len;	/* zeroed, never built */
	struct syncmem_pool *pool = NULL, *attached;
	struct syncmem_keyed *k = NULL;
	struct syncmem_flight *f = NULL;
	int step = 0;

#define EXPECT_RO(call) do { step++; if ((call) != -EBADF) return step; } while (0)
	syncmem_lock_init(&o->lock, SYNCMEM_LOCK_FAIR);
	syncmem_gate_init(&o->gate, false);
	syncmem_rwlock_init(&o->rw);
	EXPECT_RO(syncmem_gate_init_flags(&o->gate, false, SYNCMEM_GATE_HELD));
	EXPECT_RO(syncmem_sem_init(&o->sem, 5));
	EXPECT_RO(syncmem_pool_init(spare, pool_len, 64, POOL_BLOCKS, &pool));
	EXPECT_RO(syncmem_keyed_init(spare, table_len, ENTRIES, &k));
	if (syncmem_pool_attach(o->pool, pool_len, &attached))
		return 100;
	EXPECT_RO(syncmem_flight_init(ro, spare, table_len, ENTRIES, attached, &f));
	/* The other writers of the pool, and of the lock. */
	EXPECT_RO(syncmem_pool_give(attached, (uint32_t)(pool_len - 64), SYNCMEM_POOL_ANYONE));
	EXPECT_RO(syncmem_pool_take(attached, (uint32_t)(pool_len - 64), 1));
	EXPECT_RO(syncmem_pool_reclaim(attached));
	syncmem_pool_detach(attached);
	EXPECT_RO(syncmem_lock_interruptible(ro, &o->lock, MS));
	EXPECT_RO(syncmem_lock_consistent(ro, &o->lock));
	EXPECT_RO(syncmem_name_object(ro, &o->lock, sizeof(o->lock), SYNCMEM_OBJ_LOCK, "l"));
	EXPECT_RO(syncmem_handoff32(ro, (uint32_t *)&o->sem.word, 1));
#undef EXPECT_RO
	return 0;
}

TEST_F(hostile, read_only_inits_are_ebadf_or_nothing_not_sigsegv)
{
	struct syncmem_lock lock;
	struct syncmem_gate gate;
	struct syncmem_rwlock rw;
	pid_t pid;

	/* Values the inits would overwrite. */
	ASSERT_EQ(0, syncmem_lock(self->rw, &self->o->lock));
	ASSERT_EQ(0, syncmem_gate_wait(self->rw, &self->o->gate, 0));
	ASSERT_EQ(0, syncmem_rwlock_rdlock(self->rw, &self->o->rw));
	lock = self->o->lock;
	gate = self->o->gate;
	rw = self->o->rw;
	pid = fork();
	ASSERT_LE(0, pid);
	if (!pid) {
		alarm(60);
		_exit(read_only_inits(self->ro, self->ro_o));
	}
	EXPECT_EQ(0, wait_exit(pid));
	EXPECT_NE(0, lock.word);
	EXPECT_EQ(0, memcmp(&lock, &self->o->lock, sizeof(lock)));
	EXPECT_EQ(0, memcmp(&gate, &self->o->gate, sizeof(gate)));
	EXPECT_EQ(0, memcmp(&rw, &self->o->rw, sizeof(rw)));
	EXPECT_EQ(1, syncmem_sem_value(&self->o->sem));
	EXPECT_EQ(POOL_BLOCKS, syncmem_pool_free_count(self->pool));
	EXPECT_EQ(0, syncmem_unlock(self->rw, &self->o->lock));
	EXPECT_EQ(0, syncmem_rwlock_unlock(self->rw, &self->o->rw));
	EXPECT_EQ(0, syncmem_gate_signal(self->rw, &self->o->gate));
}

/* The calling process's owner id, as the kernel issues it. */
static uint64_t process_owner_id(struct syncmem_region *r)
{
	struct syncmem_owner o = { .flags = SYNCMEM_OWNER_PROCESS };

	if (ioctl(syncmem_region_fd(r), SYNCMEM_IOC_OWNER, &o))
		return 0;
	return o.id;
}

/*
 * A peer writes the keyed table's own lock (taken only to add a key) as
 * held by a live owner that will never release it: every call still ends.
 * Keys already in the table work on. For a new key a try call says -EBUSY
 * within milliseconds, a timed one times out on time, an unlock says at
 * once that the key is not held, and a lock with no timeout reports the
 * table broken after ten seconds.
 */
TEST_F_TIMEOUT(hostile, keyed_calls_end_when_the_table_lock_is_held_for_good, 120)
{
	struct syncmem_keyed *k = self->k;
	uint64_t live = process_owner_id(self->rw);
	int64_t t0;

	ASSERT_NE(0, live);
	ASSERT_EQ(0, syncmem_keyed_lock(self->rw, k, "old", 3, SYNCMEM_FOREVER));
	ASSERT_EQ(0, syncmem_keyed_unlock(self->rw, k, "old", 3));
	__atomic_store_n(&k->t.lock.word, live | SYNCMEM_OWNER_WAITERS, __ATOMIC_RELAXED);
	EXPECT_EQ(0, syncmem_keyed_lock(self->rw, k, "old", 3, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->rw, k, "old", 3));
	t0 = now_ns();
	EXPECT_EQ(-EBUSY, syncmem_keyed_trylock(self->rw, k, "key", 3));
	EXPECT_GT(2000 * MS, now_ns() - t0);
	t0 = now_ns();
	EXPECT_EQ(-ETIMEDOUT, syncmem_keyed_lock(self->rw, k, "key", 3, 200 * MS));
	EXPECT_LE(200 * MS, now_ns() - t0);
	EXPECT_GT(5000 * MS, now_ns() - t0);
	t0 = now_ns();
	EXPECT_EQ(-EPERM, syncmem_keyed_unlock(self->rw, k, "key", 3));
	EXPECT_GT(2000 * MS, now_ns() - t0);
	t0 = now_ns();
	EXPECT_EQ(-EUCLEAN, syncmem_keyed_lock(self->rw, k, "key", 3, SYNCMEM_FOREVER));
	EXPECT_LE(10000 * MS, now_ns() - t0);
	EXPECT_GT(60000 * MS, now_ns() - t0);
}

/*
 * A peer writes the table lock as held by an owner id that no live thread
 * has (the lock of a holder that died): the next call takes it over, and
 * the table works on at once.
 */
TEST_F(hostile, keyed_table_lock_of_a_dead_holder_is_taken_over)
{
	struct syncmem_keyed *k = self->k;
	int64_t t0;

	__atomic_store_n(&k->t.lock.word, 12345 | SYNCMEM_OWNER_WAITERS, __ATOMIC_RELAXED);
	t0 = now_ns();
	EXPECT_EQ(0, syncmem_keyed_lock(self->rw, k, "key", 3, SYNCMEM_FOREVER));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->rw, k, "key", 3));
	EXPECT_EQ(0, syncmem_keyed_trylock(self->rw, k, "key", 3));
	EXPECT_EQ(0, syncmem_keyed_unlock(self->rw, k, "key", 3));
	EXPECT_GT(2000 * MS, now_ns() - t0);
	EXPECT_EQ(0, k->t.lock.word);
}

TEST_HARNESS_MAIN
