// SPDX-License-Identifier: MIT
/*
 * A cache filler with single-flight: several processes miss the cache for
 * the same key at once; one of them computes the value, the others wait for
 * it and all get the same bytes. If the process computing it died, the
 * others would get -EOWNERDEAD instead of waiting forever.
 *
 *   cc -o cache_fill cache_fill.c $(pkg-config --cflags --libs syncmem)
 */
#define _POSIX_C_SOURCE 200809L
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <syncmem.h>

#define PROCS		4
#define BLOCK		256
#define NBLOCKS		8
#define ENTRIES		8

struct shared {
	uint32_t computed;		/* how many times the value was computed */
	uint32_t arrived;
	uint8_t pool[] __attribute__((aligned(64)));
};

/* The expensive part: runs in one process for all of them. */
static int compute(void *arg, void *out, size_t cap, size_t *len)
{
	struct shared *sh = arg;
	struct timespec slow = { 0, 200 * 1000 * 1000 };

	__atomic_fetch_add(&sh->computed, 1, __ATOMIC_RELAXED);
	nanosleep(&slow, NULL);
	*len = (size_t)snprintf(out, cap, "config v42, computed by process %d", (int)getpid()) + 1;
	return 0;
}

static int miss(struct syncmem_region *r, struct syncmem_flight *f, struct shared *sh)
{
	char value[BLOCK];
	int n;

	/* Start together, as a burst of requests for a cold key would. */
	__atomic_fetch_add(&sh->arrived, 1, __ATOMIC_RELAXED);
	while (__atomic_load_n(&sh->arrived, __ATOMIC_RELAXED) < PROCS)
		nanosleep(&(struct timespec){ 0, 100 * 1000 }, NULL);
	n = syncmem_flight_do(r, f, "config", 6, compute, sh, value, sizeof(value));
	if (n < 0) {
		fprintf(stderr, "cache_fill: %s\n", syncmem_strerror(n));
		return 1;
	}
	printf("process %d got \"%s\"\n", (int)getpid(), value);
	fflush(stdout);		/* the child leaves by _exit() */
	return 0;
}

int main(void)
{
	size_t pool_len = syncmem_pool_footprint(BLOCK, NBLOCKS);
	size_t table_at = (pool_len + 63) & ~(size_t)63;
	size_t table_len = syncmem_flight_footprint(ENTRIES);
	struct syncmem_region *r;
	struct syncmem_pool *pool;
	struct syncmem_flight *f;
	struct shared *sh;
	int failed = 0, err;

	err = syncmem_open(NULL, sizeof(*sh) + table_at + table_len, 0, 0, &r);
	if (!err) {
		sh = syncmem_base(r);
		err = syncmem_pool_init(sh->pool, pool_len, BLOCK, NBLOCKS, &pool);
	}
	if (!err)
		err = syncmem_flight_init(r, sh->pool + table_at, table_len, ENTRIES, pool, &f);
	if (err) {
		fprintf(stderr, "cache_fill: %s\n", syncmem_strerror(err));
		return 1;
	}
	fflush(stdout);
	for (int i = 0; i < PROCS; i++)
		if (fork() == 0)
			_exit(miss(r, f, sh));
	for (int i = 0, st; i < PROCS; i++)
		if (wait(&st) < 0 || !WIFEXITED(st) || WEXITSTATUS(st))
			failed = 1;
	printf("cache_fill: %d processes, the value was computed %u time(s)\n", PROCS,
	       sh->computed);
	failed |= sh->computed != 1;
	syncmem_pool_detach(pool);
	syncmem_close(r);
	return failed;
}
