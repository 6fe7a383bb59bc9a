// SPDX-License-Identifier: GPL-2.0
/*
 * lock_instructions KIND N: N uncontended lock+unlock pairs of KIND
 * (syncmem, fair, pthread; rdlock, pthread_rd: read lock and unlock of an
 * rwlock; keyed: lock and unlock of one key of a keyed table, own: the
 * same of a lock of its own; weblocks, weblocks_sh: request and release of a
 * recently used name of a Web Locks manager, exclusive or shared) inside one
 * function, for valgrind --tool=callgrind
 * --toggle-collect=KIND_pair (see tools/bench/lock-instructions).
 *
 * It runs on the host, where the module cannot be loaded: an uncontended
 * lock never enters the kernel, so a region descriptor over a memfd mapping
 * (built from the library's internal header) stands in for a real region.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "bench.h"
#include "internal.h"

__attribute__((noinline)) int syncmem_pair(struct syncmem_region *r, struct syncmem_lock *l);
__attribute__((noinline)) int pthread_pair(pthread_mutex_t *m);
__attribute__((noinline)) int rdlock_pair(struct syncmem_region *r, struct syncmem_rwlock *rw);
__attribute__((noinline)) int pthread_rd_pair(pthread_rwlock_t *rw);
__attribute__((noinline)) int keyed_pair(struct syncmem_region *r, struct syncmem_keyed *k);
__attribute__((noinline)) int weblocks_pair(struct syncmem_locks *m, unsigned int flags);

__attribute__((noinline)) int syncmem_pair(struct syncmem_region *r, struct syncmem_lock *l)
{
	return syncmem_lock(r, l) | syncmem_unlock(r, l);
}

__attribute__((noinline)) int pthread_pair(pthread_mutex_t *m)
{
	return pthread_mutex_lock(m) | pthread_mutex_unlock(m);
}

__attribute__((noinline)) int rdlock_pair(struct syncmem_region *r, struct syncmem_rwlock *rw)
{
	return syncmem_rwlock_rdlock(r, rw) | syncmem_rwlock_unlock(r, rw);
}

__attribute__((noinline)) int pthread_rd_pair(pthread_rwlock_t *rw)
{
	return pthread_rwlock_rdlock(rw) | pthread_rwlock_unlock(rw);
}

__attribute__((noinline)) int keyed_pair(struct syncmem_region *r, struct syncmem_keyed *k)
{
	return syncmem_keyed_lock(r, k, "key-1", 5, SYNCMEM_FOREVER) |
	       syncmem_keyed_unlock(r, k, "key-1", 5);
}

__attribute__((noinline)) int weblocks_pair(struct syncmem_locks *m, unsigned int flags)
{
	struct syncmem_held *h;
	int ret = syncmem_locks_request(m, "name-1", 6, flags, SYNCMEM_FOREVER, &h);

	return ret ? ret : syncmem_locks_release(h);
}

static struct syncmem_keyed *keyed;
static struct syncmem_locks *weblocks;

/* One pair of @kind. */
static int pair(const char *kind, struct syncmem_region *r, struct syncmem_lock *l,
		pthread_mutex_t *m, struct syncmem_rwlock *rw, pthread_rwlock_t *prw)
{
	if (!strcmp(kind, "keyed"))
		return keyed_pair(r, keyed);
	if (!strcmp(kind, "weblocks"))
		return weblocks_pair(weblocks, 0);
	if (!strcmp(kind, "weblocks_sh"))
		return weblocks_pair(weblocks, SYNCMEM_LOCKS_SHARED);
	if (!strcmp(kind, "pthread"))
		return pthread_pair(m);
	if (!strcmp(kind, "rdlock"))
		return rdlock_pair(r, rw);
	if (!strcmp(kind, "pthread_rd"))
		return pthread_rd_pair(prw);
	return syncmem_pair(r, l);
}

int main(int argc, char **argv)
{
	struct syncmem_region r;
	pthread_rwlockattr_t ra;
	pthread_mutexattr_t a;
	pthread_rwlock_t *prw;
	pthread_mutex_t *m;
	struct syncmem_rwlock *rw;
	struct syncmem_lock *l;
	long n;
	int bad = 0;

	if (argc != 3)
		return 2;
	n = atol(argv[2]);
	syncmem__region_fill(&r, -1, memfd_shared(131072), 131072, false);
	m = memfd_shared(4096);
	prw = memfd_shared(4096);
	if (!r.base || !m || !prw)
		return 1;
	l = r.base;
	rw = (struct syncmem_rwlock *)((char *)r.base + 1024);
	syncmem_rwlock_init(rw);
	if (syncmem_keyed_init((char *)r.base + 4096, 65536 - 4096, 64, &keyed))
		return 1;
	pthread_rwlockattr_init(&ra);
	pthread_rwlockattr_setpshared(&ra, PTHREAD_PROCESS_SHARED);
	pthread_rwlock_init(prw, &ra);
	syncmem_lock_init(l, strcmp(argv[1], "fair") ? 0 : SYNCMEM_LOCK_FAIR);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(m, &a);
	/*
	 * No device here: the owner id the kernel issues at a thread's first
	 * lock is cached by hand. Warm-up: the pages get faulted in.
	 */
	syncmem__cached_owner = 1;
	syncmem__process_owner_stand_in(2);
	if (syncmem_locks_init(&r, (char *)r.base + 65536, syncmem_locks_footprint(4, 16),
			       &weblocks))
		return 1;
	bad |= pair(argv[1], &r, l, m, rw, prw);
	for (long i = 0; i < n; i++)
		bad |= pair(argv[1], &r, l, m, rw, prw);
	return bad ? 1 : 0;
}
