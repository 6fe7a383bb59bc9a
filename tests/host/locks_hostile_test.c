// SPDX-License-Identifier: GPL-2.0
/*
 * Mutex, gate, semaphore and rwlock words against hostile peers: another
 * process may write anything into them at any moment. Calls must return
 * (no endless loop), never fault, and answer a documented result:
 * -EUCLEAN for word values this library never writes. Memory mapped
 * read-only answers -EBADF instead of SIGSEGV.
 *
 * No kernel here: the region handle is a stand-in over plain shared memory
 * (hostile.h) whose waits and wakes fail with -ENOTTY; everything that
 * does not need the kernel runs as on a real region.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/mman.h>

#include "kselftest_harness.h"
#include "hostile.h"
#include "locks.h"
#include "syncmem.h"

struct objects {
	struct syncmem_lock lock;
	struct syncmem_gate gate;
	struct syncmem_sem sem;
	struct syncmem_rwlock rw;
};

struct victim_arg {
	struct syncmem_region *r;
	struct objects *o;
	double seconds;
};

#define MS	1000000

/* Fail the victim with @code unless @cond. */
#define CHECK(cond, code)			\
	do {					\
		if (!(cond))			\
			return (code);		\
	} while (0)

static void init_objects(struct objects *o)
{
	syncmem_lock_init(&o->lock, 0);
	syncmem_gate_init(&o->gate, false);
	syncmem_sem_init(&o->sem, 0);
	syncmem_rwlock_init(&o->rw);
}

/*
 * The objects between guard pages, a stand-in region over them: run
 * @victim on them in a child (alarm: 20 s), with a scribbler writing into
 * them meanwhile if @scribble. The victim's exit status.
 */
static int on_guarded_objects(int (*victim)(void *arg), double seconds, bool scribble)
{
	struct syncmem_region r;
	struct victim_arg a;
	struct guarded g;
	pid_t scribbler = 0;
	int ret;

	if (guarded_map(sizeof(struct objects), &g))
		return -1;
	if (stand_in_region(&r, g.mem, g.len, false)) {
		guarded_unmap(&g);
		return -1;
	}
	a = (struct victim_arg){ &r, (struct objects *)g.mem, seconds };
	init_objects(a.o);
	if (scribble)
		scribbler = scribbler_start(g.mem, g.len, 4, 0xb0b);
	/*
	 * Generous: a call that gives up after its retry limit makes tens of
	 * thousands of intercepted ioctls, slow under the sanitizers on a
	 * loaded machine. A call that never gave up would still be caught.
	 */
	ret = scribbler < 0 ? -1 : run_victim(victim, &a, 90);
	if (scribbler > 0)
		scribbler_stop(scribbler);
	close(r.fd);
	guarded_unmap(&g);
	return ret;
}

/* Each impossible or final word value meets the call that reads it. */
static int impossible_victim(void *arg)
{
	struct victim_arg *a = arg;
	struct syncmem_region *r = a->r;
	struct objects *o = a->o;

	/* A lock made unrecoverable: nobody takes it, nobody unlocks it. */
	o->lock.word = SYNCMEM_OWNER_NOTRECOVERABLE;
	CHECK(syncmem_trylock(r, &o->lock) == -ENOTRECOVERABLE, 1);
	CHECK(syncmem_lock_timed(r, &o->lock, MS) == -ENOTRECOVERABLE, 2);
	CHECK(syncmem_unlock(r, &o->lock) == -EPERM, 3);
	/* Flags other than FAIR, met by an unlock that has waiters to serve. */
	o->lock.word = STAND_IN_OWNER | SYNCMEM_OWNER_WAITERS;
	o->lock.flags = 0x100;
	CHECK(syncmem_unlock(r, &o->lock) == -EUCLEAN, 4);
	/* ... and by a locker that would sleep. */
	o->lock.word = 12345;
	CHECK(syncmem_lock_timed(r, &o->lock, MS) == -EUCLEAN, 5);

	/* A gate word no gate holds, or flags no gate has. */
	o->gate.word = SYNCMEM_OWNER_NOTRECOVERABLE;
	CHECK(syncmem_gate_wait(r, &o->gate, 0) == -EUCLEAN, 6);
	CHECK(syncmem_gate_wait(r, &o->gate, MS) == -EUCLEAN, 7);
	CHECK(syncmem_gate_signal(r, &o->gate) == -EUCLEAN, 8);
	CHECK(o->gate.word == SYNCMEM_OWNER_NOTRECOVERABLE, 9);
	o->gate.word = 0;
	o->gate.flags = 2;
	CHECK(syncmem_gate_wait(r, &o->gate, 0) == -EUCLEAN, 21);
	CHECK(o->gate.word == 0, 22);
	o->gate.flags = 0;
	/* Any other word names some owner: a closed gate, not a corrupted one. */
	o->gate.word = 12345;
	CHECK(syncmem_gate_wait(r, &o->gate, 0) == -ETIMEDOUT, 24);
	o->gate.word = 12345;	/* without the waiters bit the wait set: no kernel here */
	CHECK(syncmem_gate_signal(r, &o->gate) == 0 && o->gate.word == 0, 25);

	/* More units than SYNCMEM_SEM_VALUE_MAX. */
	o->sem.word = 0x80000000u;
	CHECK(syncmem_sem_trywait(r, &o->sem) == -EUCLEAN, 10);
	CHECK(syncmem_sem_timedwait(r, &o->sem, 0) == -EUCLEAN, 11);
	CHECK(syncmem_sem_post(r, &o->sem) == -EUCLEAN, 12);
	CHECK(o->sem.word == 0x80000000u, 13);
	/* Bits 32-62, which the library never sets (the high half is no waiter count). */
	o->sem.word = 0xffffffffull << 32;
	CHECK(syncmem_sem_timedwait(r, &o->sem, 0) == -EUCLEAN, 14);
	CHECK(syncmem_sem_post(r, &o->sem) == -EUCLEAN, 15);
	CHECK(o->sem.word == 0xffffffffull << 32, 16);
	o->sem.word = (1ull << 32) | 1;
	CHECK(syncmem_sem_trywait(r, &o->sem) == -EUCLEAN, 26);
	/* The top bit alone is the waiters mark: a unit is there to take. */
	o->sem.word = (1ull << 63) | 1;
	CHECK(syncmem_sem_trywait(r, &o->sem) == 0 && o->sem.word == 1ull << 63, 27);
	o->sem.word = 0;

	/* A slot of this process counting more shares than a slot may. */
	o->rw.slot[0].owner = STAND_IN_PROCESS;
	o->rw.slot[0].count = 0x7fffffff;
	CHECK(syncmem_rwlock_tryrdlock(r, &o->rw) == -EUCLEAN, 17);
	CHECK(syncmem_rwlock_rdlock_timed(r, &o->rw, MS) == -EUCLEAN, 18);
	CHECK(o->rw.slot[0].count == 0x7fffffff, 19);
	CHECK(o->rw.turnstile.word == 0, 20);	/* let go of */
	CHECK(o->rw.closed == 0, 23);
	o->rw.slot[0].count = 0;
	return 0;
}

TEST(impossible_or_unrecoverable_words_are_refused)
{
	EXPECT_EQ(0, on_guarded_objects(impossible_victim, 0, false));
}

/* Every wait finds the word changed: each blocking call gives up. */
static int changing_victim(void *arg)
{
	struct victim_arg *a = arg;
	struct syncmem_region *r = a->r;
	struct objects *o = a->o;

	if (every_wait_finds_the_word_changed())
		return 50;
	/* Held by another thread, waited on. */
	o->lock.word = SYNCMEM_OWNER_WAITERS | 12345;
	CHECK(syncmem_lock(r, &o->lock) == -EUCLEAN, 1);
	CHECK(syncmem_lock_timed(r, &o->lock, 1000 * MS) == -EUCLEAN, 2);
	CHECK(o->lock.starving == 0, 3);
	/* Closed and waited on. */
	o->gate.word = SYNCMEM_OWNER_NOBODY | SYNCMEM_OWNER_WAITERS;
	CHECK(syncmem_gate_wait(r, &o->gate, SYNCMEM_FOREVER) == -EUCLEAN, 4);
	/* No unit: the waiter marks the word waited on and gives up. */
	CHECK(syncmem_sem_wait(r, &o->sem) == -EUCLEAN, 5);
	CHECK(o->sem.word == 1ull << 63, 6);	/* until the next post */
	/* A reader inside: the writer waits for it to leave, gives up. */
	o->rw.slot[5].owner = 12345;
	o->rw.slot[5].count = 1;
	CHECK(syncmem_rwlock_wrlock(r, &o->rw) == -EUCLEAN, 7);
	CHECK(o->rw.slot[5].count == 1, 8);
	CHECK(o->rw.turnstile.word == 0, 9);
	CHECK(o->rw.closed == 0, 10);	/* open to readers again */
	CHECK(o->rw.slot[5].owner == 12345, 11);	/* no waiters bit left */
	return 0;
}

/*
 * A peer that changes a word between every read and every wait of a call
 * would keep it looping forever: it gives up with -EUCLEAN instead, and
 * leaves the object as it found it.
 */
TEST(a_word_that_keeps_changing_cannot_keep_a_call_looping)
{
	EXPECT_EQ(0, on_guarded_objects(changing_victim, 0, false));
}

/* Results any call of the family may give here (no -EINVAL: all is in place). */
static bool documented(int ret)
{
	switch (ret) {
	case 0:
	case -ETIMEDOUT:
	case -EBUSY:
	case -EAGAIN:
	case -EDEADLK:
	case -EPERM:
	case -EOVERFLOW:
	case -EUCLEAN:
	case -EOWNERDEAD:	/* a scribbled holder is a dead one */
	case -ENOTRECOVERABLE:	/* ... and one scribbled state says so */
	case -ENOTTY:	/* a wait or wake: the stand-in region has no kernel */
		return true;
	}
	return false;
}

/* Lock, unlock, pass, signal, post and take in a loop while words change. */
static int scribbled_victim(void *arg)
{
	struct victim_arg *a = arg;
	struct syncmem_region *r = a->r;
	struct objects *o = a->o;
	double end = hostile_now() + a->seconds;
	unsigned long calls = 0, euclean = 0;

	while (hostile_now() < end) {
		int ret[16], n = 0;

		ret[n++] = syncmem_trylock(r, &o->lock);
		ret[n++] = syncmem_unlock(r, &o->lock);
		ret[n++] = syncmem_lock_timed(r, &o->lock, MS);
		ret[n++] = syncmem_unlock(r, &o->lock);
		ret[n++] = syncmem_gate_wait(r, &o->gate, 0);
		ret[n] = syncmem_gate_signal(r, &o->gate);
		ret[n] = ret[n] == 1 ? 0 : ret[n];	/* handed to a waiter */
		n++;
		ret[n++] = syncmem_sem_post(r, &o->sem);
		ret[n++] = syncmem_sem_trywait(r, &o->sem);
		ret[n++] = syncmem_sem_timedwait(r, &o->sem, 0);
		ret[n++] = syncmem_rwlock_tryrdlock(r, &o->rw);
		ret[n++] = syncmem_rwlock_unlock(r, &o->rw);
		ret[n++] = syncmem_rwlock_trywrlock(r, &o->rw);
		ret[n++] = syncmem_rwlock_unlock(r, &o->rw);
		ret[n++] = syncmem_rwlock_rdlock_timed(r, &o->rw, MS);
		ret[n++] = syncmem_rwlock_wrlock_timed(r, &o->rw, MS);
		ret[n++] = syncmem_rwlock_unlock(r, &o->rw);
		for (int i = 0; i < n; i++) {
			if (!documented(ret[i])) {
				printf("# call %d returned %d\n", i, ret[i]);
				fflush(stdout);
				return 30 + i;
			}
			euclean += ret[i] == -EUCLEAN;
		}
		calls += n;
	}
	printf("# %lu calls, %lu -EUCLEAN\n", calls, euclean);
	fflush(stdout);
	return 0;
}

/*
 * A scribbler writes random and plausible values into every word of a
 * mutex, a gate, a semaphore and an rwlock while a process uses them.
 */
TEST(scribbled_words_never_hang_fault_or_invent_results)
{
	EXPECT_EQ(0, on_guarded_objects(scribbled_victim, 2.0, true));
}

/* Every call that writes the object, through a read-only mapping. */
static int read_only_victim(void *arg)
{
	struct victim_arg *a = arg;
	struct syncmem_region *r = a->r;
	struct objects *o = a->o;
	struct syncmem_lock outside;

	CHECK(syncmem_lock(r, &o->lock) == -EBADF, 1);
	CHECK(syncmem_lock_timed(r, &o->lock, MS) == -EBADF, 2);
	CHECK(syncmem_trylock(r, &o->lock) == -EBADF, 3);
	CHECK(syncmem_unlock(r, &o->lock) == -EBADF, 4);
	/* Outside the region it is -ERANGE, read-only or not. */
	CHECK(syncmem_trylock(r, &outside) == -ERANGE, 5);
	CHECK(syncmem_unlock(r, &outside) == -ERANGE, 6);
	CHECK(syncmem_gate_wait(r, &o->gate, 0) == -EBADF, 7);
	CHECK(syncmem_gate_signal(r, &o->gate) == -EBADF, 8);
	CHECK(syncmem_sem_wait(r, &o->sem) == -EBADF, 9);
	CHECK(syncmem_sem_timedwait(r, &o->sem, 0) == -EBADF, 10);
	CHECK(syncmem_sem_trywait(r, &o->sem) == -EBADF, 11);
	CHECK(syncmem_sem_post(r, &o->sem) == -EBADF, 12);
	CHECK(syncmem_rwlock_rdlock(r, &o->rw) == -EBADF, 13);
	CHECK(syncmem_rwlock_tryrdlock(r, &o->rw) == -EBADF, 14);
	CHECK(syncmem_rwlock_wrlock(r, &o->rw) == -EBADF, 15);
	CHECK(syncmem_rwlock_trywrlock(r, &o->rw) == -EBADF, 16);
	CHECK(syncmem_rwlock_unlock(r, &o->rw) == -EBADF, 17);
	/* Reading is fine. */
	CHECK(syncmem_sem_value(&o->sem) == 1, 18);
	return 0;
}

TEST(read_only_memory_is_ebadf_not_sigsegv)
{
	size_t len = sysconf(_SC_PAGESIZE);
	int fd = memfd_create("locks-ro", MFD_CLOEXEC);
	struct syncmem_region r;
	struct victim_arg a;
	char *rw, *ro;

	ASSERT_LE(0, fd);
	ASSERT_EQ(0, ftruncate(fd, (off_t)len));
	rw = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	ro = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	ASSERT_NE(MAP_FAILED, rw);
	ASSERT_NE(MAP_FAILED, ro);
	init_objects((struct objects *)rw);
	syncmem_sem_init(&((struct objects *)rw)->sem, 1);
	ASSERT_EQ(0, stand_in_region(&r, ro, len, true));
	a = (struct victim_arg){ &r, (struct objects *)ro, 0 };
	EXPECT_EQ(0, run_victim(read_only_victim, &a, 20));
	close(r.fd);
	munmap(rw, len);
	munmap(ro, len);
	close(fd);
}

/*
 * A Web Locks manager whose cell count a peer scribbled: the sweep that a
 * full name table runs sized its list by that count before bounding it
 * (a 512 GiB malloc: -ENOMEM, or an abort under ASan). Bounded first, the
 * sweep goes on to ask the kernel (the stand-in's -ENOTTY here).
 */
TEST(a_scribbled_cell_count_sizes_nothing)
{
	size_t len = syncmem_locks_footprint(1, 4);
	struct syncmem_held *h = NULL, *h2 = NULL;
	struct syncmem_region r;
	struct syncmem_locks *m;
	struct guarded g;

	ASSERT_EQ(0, guarded_map(len, &g));
	ASSERT_EQ(0, stand_in_region(&r, g.mem, g.len, false));
	ASSERT_EQ(0, syncmem_locks_init(&r, g.mem, len, &m));
	ASSERT_EQ(0, syncmem_locks_request(m, "a", 1, 0, SYNCMEM_FOREVER, &h));
	((struct locks_header *)g.mem)->used_cells = 0xffffffffu;
	EXPECT_NE(-ENOMEM, syncmem_locks_request(m, "b", 1, SYNCMEM_LOCKS_IF_AVAILABLE,
						 SYNCMEM_FOREVER, &h2));
	EXPECT_EQ(NULL, h2);
	syncmem_locks_detach(m);
	free(h);
	close(r.fd);
	guarded_unmap(&g);
}

/* The name of the cell whose exclusive hold is @h's: the cell the grant went to. */
static bool held_cell_is(struct syncmem_locks *m, const struct syncmem_held *h, const char *name)
{
	const struct locks_cell *c = &m->cells[h->cell];

	return (uint32_t)c->excl == h->req + 1 && c->len == strlen(name) &&
	       !memcmp(c->name, name, c->len);
}

struct other_try {
	struct syncmem_locks *m;
	const char *name;
	int ret;
};

/* From another thread (another thread cache): request @name if available. */
static void *other_thread_try(void *arg)
{
	struct other_try *t = arg;
	struct syncmem_held *h = NULL;

	t->ret = syncmem_locks_request(t->m, t->name, strlen(t->name),
				       SYNCMEM_LOCKS_IF_AVAILABLE, SYNCMEM_FOREVER, &h);
	if (!t->ret)
		syncmem_locks_release(h);
	return NULL;
}

/*
 * A thread remembers where a name's cell was (its fast path skips the
 * hash and the lookup). Once the name was evicted and its cell renamed,
 * that memory must not be used: the request goes to the name's new cell,
 * and the name now in the old cell stays free. Names of 1 and of 20
 * bytes (the cache compares them differently), both modes.
 */
TEST(a_thread_cache_never_grants_a_renamed_cell)
{
	static const char *const sets[2][4] = {
		{ "a", "b", "c", "d" },
		{ "resource-00000000-aa", "resource-00000000-bb", "resource-00000000-cc",
		  "resource-00000000-dd" },
	};
	size_t len = syncmem_locks_footprint(2, 8);
	struct syncmem_region r;
	struct syncmem_locks *m;
	struct guarded g;

	ASSERT_EQ(0, guarded_map(len, &g));
	ASSERT_EQ(0, stand_in_region(&r, g.mem, g.len, false));
	for (int set = 0; set < 2; set++)
		for (unsigned int mode = 0; mode <= SYNCMEM_LOCKS_SHARED; mode += SYNCMEM_LOCKS_SHARED) {
			const char *const *n = sets[set];
			struct syncmem_held *h = NULL, *h2 = NULL;
			struct other_try t;
			pthread_t th;

			ASSERT_EQ(0, syncmem_locks_init(&r, g.mem, len, &m));
			ASSERT_EQ(2, m->max_names);
			/*
			 * Each name twice (the second request, on the fast path,
			 * is remembered): n[0] is, then both cells go to n[2], n[3].
			 */
			for (int i = 0; i < 8; i++) {
				ASSERT_EQ(0, syncmem_locks_request(m, n[i / 2], strlen(n[i / 2]),
								   mode, SYNCMEM_FOREVER, &h));
				ASSERT_EQ(0, syncmem_locks_release(h));
			}
			/* Twice: the first takes the slow path, the second the fast one. */
			for (int pass = 0; pass < 2; pass++) {
				ASSERT_EQ(0, syncmem_locks_request(m, n[0], strlen(n[0]), 0,
								   SYNCMEM_FOREVER, &h));
				EXPECT_TRUE(held_cell_is(m, h, n[0]));
				/* The names now in the other cells are free. */
				for (int i = 2; i < 4; i++) {
					ASSERT_EQ(0, syncmem_locks_request(m, n[i], strlen(n[i]),
									   SYNCMEM_LOCKS_IF_AVAILABLE,
									   SYNCMEM_FOREVER, &h2));
					ASSERT_EQ(0, syncmem_locks_release(h2));
				}
				/*
				 * n[0] is held, for every thread (-EBUSY needs the kernel
				 * to say its holder lives: the stand-in's -ENOTTY here).
				 */
				t = (struct other_try){ m, n[0], 1 };
				ASSERT_EQ(0, pthread_create(&th, NULL, other_thread_try, &t));
				ASSERT_EQ(0, pthread_join(th, NULL));
				EXPECT_NE(0, t.ret);
				ASSERT_EQ(0, syncmem_locks_release(h));
			}
			syncmem_locks_detach(m);
			memset(g.mem, 0, len);	/* init refuses a manager that exists */
		}
	close(r.fd);
	guarded_unmap(&g);
}

/*
 * A fast grant's stamp (query's since_ns) is the clock's reading at the
 * grant: the stamp calls the vDSO's clock_gettime itself (locks.c). Here
 * CLOCK_MONOTONIC is read by both, or, where it is a system call, the
 * stamp reads the coarse clock, up to a tick behind.
 */
static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

TEST(a_fast_grant_is_stamped_with_the_time_of_the_grant)
{
	size_t len = syncmem_locks_footprint(2, 8);
	struct syncmem_region r;
	struct syncmem_locks *m;
	struct timespec res;
	struct guarded g;
	uint64_t tick, prev = 0;

	ASSERT_EQ(0, clock_getres(CLOCK_MONOTONIC_COARSE, &res));
	tick = (uint64_t)res.tv_sec * 1000000000u + (uint64_t)res.tv_nsec;
	ASSERT_EQ(0, guarded_map(len, &g));
	ASSERT_EQ(0, stand_in_region(&r, g.mem, g.len, false));
	ASSERT_EQ(0, syncmem_locks_init(&r, g.mem, len, &m));
	for (int i = 0; i < 200; i++) {
		struct syncmem_held *h;
		uint64_t before = mono_ns(), after, stamp;

		ASSERT_EQ(0, syncmem_locks_request(m, "t", 1, i & 1 ? SYNCMEM_LOCKS_SHARED : 0,
						   SYNCMEM_FOREVER, &h));
		after = mono_ns();
		stamp = m->reqs[h->req].stamp;
		/* Strictly increasing per thread: at most 1 ns past the clock per grant. */
		EXPECT_LE(stamp, after + (uint64_t)i + 1);
		EXPECT_GE(stamp + tick, before);
		EXPECT_LT(prev, stamp);
		prev = stamp;
		ASSERT_EQ(0, syncmem_locks_release(h));
		if (i % 50 == 49)
			usleep(2000);	/* let the clock move */
	}
	syncmem_locks_detach(m);
	close(r.fd);
	guarded_unmap(&g);
}

TEST_HARNESS_MAIN
