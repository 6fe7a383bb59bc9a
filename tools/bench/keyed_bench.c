// SPDX-License-Identifier: GPL-2.0
/*
 * keyed: processes locking distinct keys of one keyed table against the
 * same processes each locking a lock of its own (independent syncmem
 * locks, fair mode as keys are), in the same run, medians of alternating
 * rounds, 2 and 4 processes. The figure is the total of lock+unlock pairs
 * per second of all processes: keys that do not interfere reach the
 * independent locks' figure. Then the same with 16 keys (or locks) per
 * process taken in turn: more keys than a thread remembers where it found
 * them, so every call looks its key up in the table.
 */
#define _GNU_SOURCE
#include <stdatomic.h>
#include <string.h>

#include "bench.h"
#include "syncmem.h"

#define SECONDS		0.4
#define ROUNDS		5
#define ENTRIES		128
#define MANY		16	/* keys per process in the second case */

enum kind { OWN_LOCK, KEYED, OWN_MANY, KEYED_MANY };

struct shared {
	struct syncmem_lock own[8 * MANY] __attribute__((aligned(64)));
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

/* One process's lock+unlock pairs per second, on its own keys or locks (process @id). */
static double hammer(void *arg, int id)
{
	const struct job *j = arg;
	bool many = j->k == OWN_MANY || j->k == KEYED_MANY;
	bool kd = j->k == KEYED || j->k == KEYED_MANY;
	char key[MANY][16];
	size_t len[MANY];
	double t0 = bench_now(), t1;
	long n = 0;

	for (int i = 0; i < MANY; i++)
		len[i] = (size_t)snprintf(key[i], sizeof(key[i]), "key-%d-%d", id, i);
	do {
		for (int i = 0; i < 64; i++) {
			int which = many ? i % MANY : 0;

			if (kd) {
				syncmem_keyed_lock(region, keyed, key[which], len[which],
						   SYNCMEM_FOREVER);
				syncmem_keyed_unlock(region, keyed, key[which], len[which]);
			} else {
				struct syncmem_lock *own = &j->sh->own[id * MANY + which];

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

	for (int i = 0; i < procs * MANY; i++)
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
	for (int many = 0; many < 2; many++) {
		for (int procs = 2; procs <= 4; procs += 2) {
			double o[ROUNDS], kd[ROUNDS];
			char what[64];

			for (int i = 0; i < ROUNDS; i++) {
				o[i] = run(sh, procs, many ? OWN_MANY : OWN_LOCK);
				kd[i] = run(sh, procs, many ? KEYED_MANY : KEYED);
			}
			snprintf(what, sizeof(what), "keyed %s, %d processes",
				 many ? "16 keys each" : "distinct keys", procs);
			bench_report(what, "ops/s", bench_median(kd, ROUNDS), "own-lock",
				     bench_median(o, ROUNDS), 1);
		}
	}
	syncmem_close(region);
	return 0;
}
