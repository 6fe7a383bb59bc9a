// SPDX-License-Identifier: GPL-2.0
/*
 * rwlock: syncmem_rwlock against a process-shared pthread rwlock, in the
 * same run, medians of alternating rounds:
 *  - read-only: 2 and 4 processes take only read locks (each lock+unlock
 *    around a short read of shared data);
 *  - read-mostly: the same processes, one write lock in 64 operations.
 * The figure is the total of lock+unlock pairs per second of all processes.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "bench.h"
#include "syncmem.h"

#define SECONDS		0.4
#define ROUNDS		5

enum kind { PTHREAD, SYNCMEM };

struct shared {
	struct syncmem_rwlock rw;
	uint64_t data[8];		/* read by readers, written by writers */
	_Atomic int go;
	double rate[8];
};

static struct syncmem_region *region;
static pthread_rwlock_t *prw;	/* in memfd memory, where process-shared futexes work */

static void rdlock(struct shared *sh, enum kind k)
{
	if (k == PTHREAD)
		pthread_rwlock_rdlock(prw);
	else
		syncmem_rwlock_rdlock(region, &sh->rw);
}

static void wrlock(struct shared *sh, enum kind k)
{
	if (k == PTHREAD)
		pthread_rwlock_wrlock(prw);
	else
		syncmem_rwlock_wrlock(region, &sh->rw);
}

static void unlock(struct shared *sh, enum kind k)
{
	if (k == PTHREAD)
		pthread_rwlock_unlock(prw);
	else
		syncmem_rwlock_unlock(region, &sh->rw);
}

struct job {
	struct shared *sh;
	enum kind k;
	int write_every;	/* every this many operations writes; 0: never */
};

/* One process's lock+unlock pairs per second. */
static double hammer(void *arg, int id)
{
	const struct job *j = arg;
	struct shared *sh = j->sh;
	volatile uint64_t sink = 0;
	double t0 = bench_now(), t1;
	long n = 0;

	(void)id;
	do {
		for (int i = 0; i < 64; i++) {
			if (j->write_every && i % j->write_every == 0) {
				wrlock(sh, j->k);
				sh->data[i & 7]++;
			} else {
				rdlock(sh, j->k);
				sink += sh->data[i & 7];
			}
			unlock(sh, j->k);
		}
		n += 64;
		t1 = bench_now();
	} while (t1 - t0 < SECONDS);
	(void)sink;
	return n / (t1 - t0);
}

static double run(struct shared *sh, int procs, enum kind k, int write_every)
{
	struct job j = { sh, k, write_every };

	syncmem_rwlock_init(&sh->rw);
	return bench_forked(procs, &sh->go, sh->rate, hammer, &j);
}

int main(void)
{
	pthread_rwlockattr_t a;
	struct shared *sh;
	int err;

	err = syncmem_open(NULL, sizeof(struct shared) + 4096, 0, 0, &region);
	if (err) {
		fprintf(stderr, "rwlock: %s\n", syncmem_strerror(err));
		return 1;
	}
	sh = syncmem_base(region);
	prw = memfd_shared(4096);
	if (!prw)
		return 1;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_rwlock_init(prw, &a);
	for (int w = 0; w <= 1; w++) {
		for (int procs = 2; procs <= 4; procs += 2) {
			double p[ROUNDS], s[ROUNDS];
			char what[64];

			for (int i = 0; i < ROUNDS; i++) {
				p[i] = run(sh, procs, PTHREAD, w ? 64 : 0);
				s[i] = run(sh, procs, SYNCMEM, w ? 64 : 0);
			}
			snprintf(what, sizeof(what), "rwlock %s, %d processes",
				 w ? "1/64 writes" : "read-only", procs);
			bench_report(what, "ops/s", bench_median(s, ROUNDS), "pthread",
				     bench_median(p, ROUNDS), 1);
		}
	}
	syncmem_close(region);
	return 0;
}
