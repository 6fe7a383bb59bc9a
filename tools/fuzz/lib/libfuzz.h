/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The library fuzzer: processes drive libsyncmem objects (a pool, a keyed
 * table, locks, gates, semaphores, rwlocks, a Web Locks manager) that live
 * in one shared arena,
 * while a scribbler process writes random values into them. Built with
 * ASan and UBSan. On the host the arena is plain shared memory behind a
 * region descriptor without a kernel (its fd is -1: whatever would sleep
 * fails); in the guest (--kernel) it is a real anonymous region.
 *
 * What the library promises for memory others can write (the brief's
 * "untrusted shared memory"): no crash, no access outside the region, no
 * endless loop; a corrupted object may return errors. Without the
 * scribbler the objects must also work: blocks have one owner, locks one
 * holder, semaphores no more holders than units.
 */
#ifndef SYNCMEM_LIBFUZZ_H
#define SYNCMEM_LIBFUZZ_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <linux/syncmem.h>

#include "internal.h"

struct rng {
	uint64_t s;
};

static inline uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static inline uint64_t rng_below(struct rng *r, uint64_t n)
{
	return n ? rng_next(r) % n : 0;
}

/* ---- the arena (arena.c) ------------------------------------------------ */

#define ARENA_BYTES	(256 * 1024)
#define NLOCKS		8
#define NGATES		4
#define NSEMS		4
#define NRWLOCKS	4
#define NKEYS		16	/* distinct keys used on the keyed table */
#define KEYED_ENTRIES	8	/* fewer than keys: -ENOSPC happens */
#define POOL_BLOCK	64
#define POOL_BLOCKS	256
#define SEM_UNITS	2
#define WL_NAMES	6	/* names used on the Web Locks manager */
#define WL_ROOM_NAMES	4	/* it holds fewer: -ENOSPC happens */
#define WL_ROOM_REQS	16

/* Where each object lives, as offsets into the arena. */
struct layout {
	size_t locks, gates, sems, rwlocks, keyed, keyed_len, pool, pool_len;
	size_t weblocks, weblocks_len, end;
};

struct arena {
	struct syncmem_region region;	/* descriptor of the arena */
	char *base;
	struct layout at;
	struct syncmem_pool *pool;	/* private handle */
	uint32_t pool_blocks_off;	/* read from the header before any scribbling */
	struct syncmem_keyed *keyed;
	struct syncmem_locks *weblocks;	/* NULL without a kernel (it names processes) */
};

/*
 * Map the arena between no-access guard areas (1 GiB below, 17 GiB above:
 * as far as a 32-bit index of 4-byte words reaches), build the objects. With @kernel, a
 * region from /dev/syncmem; else shared anonymous memory. 0 or -errno.
 */
int arena_create(struct arena *a, bool kernel);
/* Is @addr in a guard area of the arena? */
bool arena_guard(const struct arena *a, uintptr_t addr);

/* ---- shared bookkeeping (outside the arena: the scribbler never hits it) - */

#define MAX_FINDINGS	32
#define FINDING_LEN	300
#define MAX_WORKERS	8

struct books {
	atomic_int lock_holders[NLOCKS];
	atomic_int gate_holders[NGATES];
	atomic_int sem_holders[NSEMS];
	atomic_int rw_writers[NRWLOCKS], rw_readers[NRWLOCKS];
	atomic_int key_holders[NKEYS];
	atomic_int wl_excl[WL_NAMES], wl_shared[WL_NAMES];	/* Web Locks holders */
	/* Watchdog: what each worker is doing since when. */
	const char *_Atomic doing[MAX_WORKERS];
	atomic_uint_least64_t since[MAX_WORKERS];
	atomic_uint_least64_t ops[MAX_WORKERS];
	/* The WAIT each worker is in (trace.c), since when (0: none). */
	struct syncmem_wait last_wait[MAX_WORKERS];
	atomic_uint_least64_t in_wait_since[MAX_WORKERS];
	atomic_uint_least64_t errors;		/* calls that returned an error */
	atomic_uint_least64_t scribbles;
	atomic_uint nfindings, nkinds;
	char findings[MAX_FINDINGS][FINDING_LEN];
	atomic_uint finding_count[MAX_FINDINGS];
	atomic_bool finding_ready[MAX_FINDINGS];
};

extern struct books *books;
void finding(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
uint64_t now_ns(void);

/* The worker whose WAIT ioctls trace.c records in books (-1: none). */
extern __thread int trace_worker;

/* ---- workers and the scribbler (ops.c, scribble.c) ---------------------- */

/* The kinds of objects a run uses (and scribbles). */
enum {
	OBJ_POOL = 1 << 0,
	OBJ_KEYED = 1 << 1,
	OBJ_LOCKS = 1 << 2,	/* locks, gates, semaphores, rwlocks */
	OBJ_WEBLOCKS = 1 << 3,	/* the Web Locks manager (with a kernel only) */
	OBJ_ALL = OBJ_POOL | OBJ_KEYED | OBJ_LOCKS | OBJ_WEBLOCKS,
};

struct worker {
	struct arena *a;
	unsigned int objects;	/* OBJ_* */
	struct rng rng;
	int index;
	bool scribbled;		/* the scribbler runs: only safety is judged */
	uint64_t seed;
};

/* Run random operations until @until; release what is held; never returns. */
void worker_run(struct worker *w, uint64_t until) __attribute__((noreturn));
/* Write random values into the arena's @objects until @until; never returns. */
void scribble_run(struct arena *a, unsigned int objects, uint64_t seed, uint64_t until)
	__attribute__((noreturn));

#endif /* SYNCMEM_LIBFUZZ_H */
