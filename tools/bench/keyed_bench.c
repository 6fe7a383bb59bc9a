// SPDX-License-Identifier: GPL-2.0
/*
 * keyed: processes locking distinct keys of one keyed table against the
 * same processes each locking a lock of its own (independent syncmem
 * locks, fair mode as keys are), in the same run, medians of alternating
 * rounds, 2 and 4 processes. The figure is the total of lock+unlock pairs
 * per second of all processes: keys that do not interfere reach the
 * independent locks' figure.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "bench.h"
#include "syncmem.h"

#define SECONDS		0.4
#define ROUNDS		5
#define ENTRIES		64

enum kind { OWN_LOCK, KEYED };

struct shared {
	struct syncmem_lock own[8] __attribute__((aligned(64)));
	_Atomic int go;
	double rate[8];
	uint64_t table[] __attribute__((aligned(64)));
};

static struct syncmem_region *region;
static struct syncmem_keyed *keyed;

struct job {
	struct shared *sh;
	enum kind k;
};

/* One process's lock+unlock pairs per second, on its own key or lock @id. */
static double hammer(void *arg, int id)
{
	const struct job *j = arg;
	struct syncmem_lock *own = &j->sh->own[id];
	char key[16];
	size_t len = (size_t)snprintf(key, sizeof(key), "key-%d", id);
	double t0 = bench_now(), t1;
	long n = 0;

	do {
		for (int i = 0; i < 64; i++) {
			if (j->k == KEYED) {
				syncmem_keyed_lock(region, keyed, key, len, SYNCMEM_FOREVER);
				syncmem_keyed_unlock(region, keyed, key, len);
			} else {
				syncmem_lock(region, own);
				syncmem_unlock(region, own);
			}
		}
		n += 64;
		t1 = bench_now();
	} while (t1 - t0 < SECONDS);
	return n / (t1 - t0);
}

static double run(struct shared *sh, int procs, enum kind k)
{
	struct job j = { sh, k };

	for (int i = 0; i < procs; i++)
		syncmem_lock_init(&sh->own[i], SYNCMEM_LOCK_FAIR);
	return bench_forked(procs, &sh->go, sh->rate, hammer, &j);
}

int main(void)
{
	size_t len = syncmem_keyed_footprint(ENTRIES);
	struct shared *sh;
	int err;

	err = syncmem_open(NULL, sizeof(struct shared) + len + 4096, 0, 0, &region);
	if (!err) {
		sh = syncmem_base(region);
		err = syncmem_keyed_init(sh->table, len, ENTRIES, &keyed);
	}
	if (err) {
		fprintf(stderr, "keyed: %s\n", syncmem_strerror(err));
		return 1;
	}
	for (int procs = 2; procs <= 4; procs += 2) {
		double o[ROUNDS], kd[ROUNDS];
		char what[64];

		for (int i = 0; i < ROUNDS; i++) {
			o[i] = run(sh, procs, OWN_LOCK);
			kd[i] = run(sh, procs, KEYED);
		}
		snprintf(what, sizeof(what), "keyed distinct keys, %d processes", procs);
		bench_report(what, "ops/s", bench_median(kd, ROUNDS), "own-lock",
			     bench_median(o, ROUNDS), 1);
	}
	syncmem_close(region);
	return 0;
}
