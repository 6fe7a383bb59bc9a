/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Pool checks shared by the host test (anonymous shared memory) and the VM
 * selftest (a syncmem region): the seed's 50-process churn made checkable,
 * and churn with processes killed in the middle.
 */
#ifndef SYNCMEM_POOL_COMMON_H
#define SYNCMEM_POOL_COMMON_H

#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "syncmem.h"

/* What an owner writes into its block, checked before it frees it. */
struct churn_block {
	_Atomic uint32_t owner;		/* 0 while free; claimed by CAS on alloc */
	uint32_t seq;
};

struct churn_stats {
	_Atomic uint64_t allocs, frees, exhausted;
	_Atomic uint64_t double_allocs;	/* a block handed to two owners at once */
	_Atomic uint64_t bad_stamps;	/* a block's content changed under its owner */
	_Atomic uint64_t errors;	/* a free that failed */
};

static inline double churn_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/*
 * Randomly allocate and free (holding at most @max_held blocks) for
 * @seconds, stamping each block with {owner id, sequence} and checking the
 * stamp before freeing. Frees what it holds at the end.
 */
static inline void churn(struct syncmem_pool *p, struct churn_stats *st, uint32_t id,
			 int max_held, double seconds)
{
	uint32_t held[64], seqs[64], seq = 0;
	unsigned int seed = id * 2654435761u;
	double end = churn_now() + seconds;
	int n = 0;

	for (;;) {
		bool running = churn_now() < end;
		bool alloc = running && n < max_held && (n == 0 || rand_r(&seed) & 1);

		if (!running && !n)
			break;

		if (alloc) {
			uint32_t off = syncmem_pool_alloc(p), zero = 0;
			struct churn_block *b;

			if (!off) {
				atomic_fetch_add(&st->exhausted, 1);
				sched_yield();
				continue;
			}
			b = syncmem_pool_ptr(p, off);
			if (!atomic_compare_exchange_strong(&b->owner, &zero, id))
				atomic_fetch_add(&st->double_allocs, 1);
			b->seq = ++seq;
			held[n] = off;
			seqs[n++] = seq;
			atomic_fetch_add(&st->allocs, 1);
		} else {
			int k = rand_r(&seed) % n;
			struct churn_block *b = syncmem_pool_ptr(p, held[k]);

			if (atomic_load(&b->owner) != id || b->seq != seqs[k])
				atomic_fetch_add(&st->bad_stamps, 1);
			atomic_store(&b->owner, 0);
			if (syncmem_pool_free(p, held[k]))
				atomic_fetch_add(&st->errors, 1);
			held[k] = held[--n];
			seqs[k] = seqs[n];
			atomic_fetch_add(&st->frees, 1);
		}
	}
}

/* @nprocs processes churn concurrently; returns how many did not exit 0. */
static inline int churn_processes(struct syncmem_pool *p, struct churn_stats *st,
				  int nprocs, int max_held, double seconds)
{
	pid_t pids[64];
	int bad = 0;

	for (int i = 0; i < nprocs; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			churn(p, st, (uint32_t)i + 1, max_held, seconds);
			_exit(0);
		}
	}
	for (int i = 0; i < nprocs; i++) {
		int status;

		if (waitpid(pids[i], &status, 0) != pids[i] || !WIFEXITED(status) ||
		    WEXITSTATUS(status))
			bad++;
	}
	return bad;
}

static inline int pool_off_cmp(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Walk the whole free list by allocating until exhaustion: every block must
 * come out once, inside the pool. Returns the number allocated (and frees
 * them all again), or -1 when the list is corrupt.
 */
static inline long pool_drain_check(struct syncmem_pool *p, uint32_t nblocks)
{
	uint32_t *offs = calloc(nblocks + 1, sizeof(*offs));
	long n = 0, ret;

	if (!offs)
		return -1;
	for (uint32_t off; (off = syncmem_pool_alloc(p)); n++) {
		if (n > nblocks || !syncmem_pool_ptr(p, off)) {
			n = -1;
			break;
		}
		offs[n] = off;
	}
	ret = n;
	for (long i = 0; i < n; i++)
		if (syncmem_pool_free(p, offs[i]))
			ret = -1;
	/* No block twice. */
	qsort(offs, n > 0 ? (size_t)n : 0, sizeof(*offs), pool_off_cmp);
	for (long i = 1; i < n; i++)
		if (offs[i] == offs[i - 1])
			ret = -1;
	free(offs);
	return ret;
}

/*
 * Churn with @nprocs processes and SIGKILL @nkill of them at random moments.
 * Afterwards the list must be consistent; blocks the dead held are leaked.
 * Returns the number of leaked blocks, or -1 on corruption. The free count
 * may be off by one for each process killed inside an alloc or free; it
 * must be no further off than that.
 */
static inline long churn_with_kills(struct syncmem_pool *p, struct churn_stats *st,
				    int nprocs, int nkill, int max_held, uint32_t nblocks)
{
	pid_t pids[64];
	long got;

	for (int i = 0; i < nprocs; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			churn(p, st, (uint32_t)i + 1, max_held, 2.0);
			_exit(0);
		}
	}
	for (int k = 0; k < nkill; k++) {
		usleep(100000 + rand() % 200000);
		kill(pids[k], SIGKILL);
	}
	for (int i = 0; i < nprocs; i++)
		waitpid(pids[i], NULL, 0);
	got = pool_drain_check(p, nblocks);
	if (got < 0 || labs(got - (long)syncmem_pool_free_count(p)) > nkill)
		return -1;
	return (long)nblocks - got;
}

#endif /* SYNCMEM_POOL_COMMON_H */
