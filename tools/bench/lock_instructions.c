// SPDX-License-Identifier: GPL-2.0
/*
 * lock_instructions KIND N: N uncontended lock+unlock pairs of KIND
 * (syncmem, fair, pthread) inside one function, for valgrind --tool=callgrind
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

__attribute__((noinline)) int syncmem_pair(struct syncmem_region *r, struct syncmem_lock *l)
{
	return syncmem_lock(r, l) | syncmem_unlock(r, l);
}

__attribute__((noinline)) int pthread_pair(pthread_mutex_t *m)
{
	return pthread_mutex_lock(m) | pthread_mutex_unlock(m);
}

int main(int argc, char **argv)
{
	struct syncmem_region r;
	pthread_mutexattr_t a;
	pthread_mutex_t *m;
	struct syncmem_lock *l;
	long n;
	int bad = 0;

	if (argc != 3)
		return 2;
	n = atol(argv[2]);
	syncmem__region_fill(&r, -1, memfd_shared(4096), 4096, false);
	m = memfd_shared(4096);
	if (!r.base || !m)
		return 1;
	l = r.base;
	syncmem_lock_init(l, strcmp(argv[1], "fair") ? 0 : SYNCMEM_LOCK_FAIR);
	pthread_mutexattr_init(&a);
	pthread_mutexattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_mutex_init(m, &a);
	/*
	 * No device here: the owner id the kernel issues at a thread's first
	 * lock is cached by hand. Warm-up: the pages get faulted in.
	 */
	syncmem__cached_owner = 1;
	bad |= syncmem_pair(&r, l) | pthread_pair(m);
	for (long i = 0; i < n; i++)
		bad |= strcmp(argv[1], "pthread") ? syncmem_pair(&r, l) : pthread_pair(m);
	return bad ? 1 : 0;
}
