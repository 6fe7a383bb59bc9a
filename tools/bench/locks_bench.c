// SPDX-License-Identifier: GPL-2.0
/*
 * Web Locks manager (syncmem_locks_*) against its baselines, in the same
 * run, medians of alternating rounds; the four figures of issue 26:
 *  - uncontended: one process requests and releases a recently used name,
 *    against syncmem_lock + syncmem_unlock (target: at least 0.25x);
 *  - distinct names: 2 processes, each its own name, against 2 processes
 *    each locking its own syncmem lock (target: at least 0.5x);
 *  - shared: 4 processes take one name shared, against a process-shared
 *    pthread rwlock read-locked (target: at least 1.0x);
 *  - mixed: 4 processes on one name, 1 exclusive request in 64, the rest
 *    shared, against the pthread rwlock with the same mix (target: at
 *    least 0.5x).
 * The figure is the total of acquire+release pairs per second of all
 * processes, each around a short read (or, exclusive, a write) of the
 * data its name (or lock) guards: with distinct names, each process's own
 * cache line.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "bench.h"
#include "syncmem.h"

#define SECONDS		0.4
#define ROUNDS		5
#define NAMES		64
#define REQS		256

enum kind { LOCK, PTHREAD, WEBLOCKS };

struct shared {
	struct syncmem_lock own[8] __attribute__((aligned(64)));
	/* Line 0 guarded by the one name (or lock); line i by process i's own. */
	struct {
		uint64_t w[8];
	} data[8] __attribute__((aligned(64)));
	_Atomic int go;
	double rate[8];
	uint8_t mgr[] __attribute__((aligned(64)));
};

static struct syncmem_region *region;
static struct syncmem_locks *mgr;
static pthread_rwlock_t *prw;	/* in memfd memory, where process-shared futexes work */

struct job {
	struct shared *sh;
	enum kind k;
	int write_every;	/* every this many operations is exclusive; 0: never */
	bool distinct;		/* each process its own name (or lock) */
	bool shared;		/* the others are shared */
};

static void take(const struct job *j, int id, bool excl, struct syncmem_held **h,
		 const char *name, size_t len)
{
	switch (j->k) {
	case LOCK:
		syncmem_lock(region, &j->sh->own[j->distinct ? id : 0]);
		break;
	case PTHREAD:
		if (excl)
			pthread_rwlock_wrlock(prw);
		else
			pthread_rwlock_rdlock(prw);
		break;
	case WEBLOCKS:
		if (syncmem_locks_request(mgr, name, len, excl ? 0 : SYNCMEM_LOCKS_SHARED,
					  SYNCMEM_FOREVER, h)) {
			fprintf(stderr, "locks: request failed\n");
			_exit(1);
		}
		break;
	}
}

static void give(const struct job *j, int id, struct syncmem_held *h)
{
	switch (j->k) {
	case LOCK:
		syncmem_unlock(region, &j->sh->own[j->distinct ? id : 0]);
		break;
	case PTHREAD:
		pthread_rwlock_unlock(prw);
		break;
	case WEBLOCKS:
		syncmem_locks_release(h);
		break;
	}
}

/* One process's acquire+release pairs per second. */
static double hammer(void *arg, int id)
{
	const struct job *j = arg;
	struct shared *sh = j->sh;
	volatile uint64_t sink = 0;
	double t0 = bench_now(), t1;
	char name[16];
	size_t len = (size_t)snprintf(name, sizeof(name), "name-%d", j->distinct ? id : 0);
	uint64_t *data = sh->data[j->distinct ? id : 0].w;
	long n = 0;

	do {
		for (int i = 0; i < 64; i++) {
			bool excl = !j->shared || (j->write_every && i % j->write_every == 0);
			struct syncmem_held *h = NULL;

			take(j, id, excl, &h, name, len);
			if (excl)
				data[i & 7]++;
			else
				sink += data[i & 7];
			give(j, id, h);
		}
		n += 64;
		t1 = bench_now();
	} while (t1 - t0 < SECONDS);
	(void)sink;
	return n / (t1 - t0);
}

static double run(struct shared *sh, int procs, struct job j)
{
	for (int i = 0; i < 8; i++)
		syncmem_lock_init(&sh->own[i], 0);
	j.sh = sh;
	if (procs == 1)
		return hammer(&j, 0);
	return bench_forked(procs, &sh->go, sh->rate, hammer, &j);
}

/* Medians of @ROUNDS alternating rounds of @a (syncmem's) and @b, reported. */
static void compare(struct shared *sh, const char *what, int procs, struct job a,
		    const char *base_name, struct job b)
{
	double x[ROUNDS], y[ROUNDS];

	for (int i = 0; i < ROUNDS; i++) {
		y[i] = run(sh, procs, b);
		x[i] = run(sh, procs, a);
	}
	bench_report(what, "ops/s", bench_median(x, ROUNDS), base_name,
		     bench_median(y, ROUNDS), 1);
}

int main(void)
{
	size_t len = syncmem_locks_footprint(NAMES, REQS);
	pthread_rwlockattr_t a;
	struct shared *sh;
	int err;

	err = syncmem_open(NULL, sizeof(struct shared) + len + 4096, 0, 0, &region);
	if (!err) {
		sh = syncmem_base(region);
		err = syncmem_locks_init(region, sh->mgr, len, &mgr);
	}
	if (err) {
		fprintf(stderr, "locks: %s\n", syncmem_strerror(err));
		return 1;
	}
	prw = memfd_shared(4096);
	if (!prw)
		return 1;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setpshared(&a, PTHREAD_PROCESS_SHARED);
	pthread_rwlock_init(prw, &a);

	compare(sh, "locks uncontended, 1 process", 1,
		(struct job){ .k = WEBLOCKS }, "lock", (struct job){ .k = LOCK });
	compare(sh, "locks distinct names, 2 processes", 2,
		(struct job){ .k = WEBLOCKS, .distinct = true }, "own-lock",
		(struct job){ .k = LOCK, .distinct = true });
	compare(sh, "locks shared, 4 processes", 4,
		(struct job){ .k = WEBLOCKS, .shared = true }, "pthread",
		(struct job){ .k = PTHREAD, .shared = true });
	compare(sh, "locks 1/64 exclusive, 4 processes", 4,
		(struct job){ .k = WEBLOCKS, .shared = true, .write_every = 64 }, "pthread",
		(struct job){ .k = PTHREAD, .shared = true, .write_every = 64 });
	syncmem_locks_detach(mgr);
	syncmem_close(region);
	return 0;
}
