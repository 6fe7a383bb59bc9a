/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The Web Locks manager (locks.c): its layout in shared memory, the private
 * handles, and what its other files (the event-loop driver, query) share.
 *
 * Layout, every part 64-byte aligned, offsets from the manager's start:
 *
 *   0            struct locks_header (320 bytes)
 *   buckets_off  uint32_t bucket[nbuckets]: index + 1 of a chain's first cell
 *   cells_off    struct locks_cell cell[max_names] (1472 bytes each)
 *   reqs_off     struct locks_req req[max_reqs] (64 bytes each)
 *
 * See locks.c for the protocols and Documentation/syncmem/locks.rst.
 */
#ifndef SYNCMEM_LOCKS_H
#define SYNCMEM_LOCKS_H

#include "internal.h"

#define LOCKS_MAGIC	0x534b434cu	/* "LCKS" */
#define LOCKS_VERSION	2u
#define LOCKS_SLOTS	16		/* processes counting shares without the cell mutex */
#define LOCKS_RATIO	4u		/* requests per name a manager's room is divided in */
#define LOCKS_NAMES_MAX	(1u << 20)
#define LOCKS_REQS_MAX	(1u << 24)

struct locks_header {
	/* Lines 0-1: identity and geometry, written once by the builder. */
	uint32_t magic;
	uint32_t version;
	uint32_t state;		/* 0, then initialising, then ready (ready.h) */
	uint32_t seed;		/* keys the name hash */
	uint32_t max_names;
	uint32_t max_reqs;
	uint32_t nbuckets;	/* a power of two >= max_names */
	uint32_t cell_size;
	uint32_t req_size;
	uint32_t reserved0;
	uint64_t buckets_off;
	uint64_t cells_off;
	uint64_t reqs_off;
	uint64_t footprint;
	uint64_t builder;	/* owner id of the process building it */
	uint8_t reserved1[48];
	/* Line 2: the free requests, a tagged stack: tag << 32 | index + 1. */
	uint64_t free_reqs;
	uint8_t reserved2[56];
	/* Line 3: guards the chains, the names of cells and the fields below. */
	struct syncmem_lock table;
	/* Line 4: under @table. */
	uint32_t used_cells;	/* cells [0, used_cells) have been handed out */
	uint32_t hand;		/* the clock's hand over the cells */
	uint8_t reserved3[56];
} __attribute__((aligned(64)));

/* A process that counts its shares of a name in its own slot. */
struct locks_slot {
	uint64_t owner;		/* its process owner id; 0 free; | SLOT_CLAIMING while claimed */
	uint64_t count;		/* the cell's epoch << 32 | the process's shares */
};

/* Bits of struct locks_cell.closed: each sends fast paths to the mutex (SLOW: exclusive ones). */
#define CLOSED_QUEUE	0x1u	/* requests are queued */
#define CLOSED_SLOW	0x2u	/* shares are counted in the slow list */
#define CLOSED_DIED	0x4u	/* the next grant reports -EOWNERDEAD */
#define CLOSED_BUSY	0x8u	/* the mutex holder changes holds or the name */
#define CLOSED_ALL	0xfu

struct locks_cell {
	/* Line 0: what every fast path reads. */
	uint64_t excl;		/* epoch << 32 | the exclusive holder's req index + 1 */
	uint32_t closed;	/* CLOSED_* */
	uint32_t gen;		/* bumped twice by every change of name: odd while changing */
	uint32_t hash;
	uint32_t len;		/* of the name; 0: no name */
	uint32_t next;		/* the chain: cell index + 1 */
	uint32_t ref;		/* looked up since the clock last passed */
	uint32_t slots_used;	/* bit i: slot i is claimed (set before it counts, cleared once freed) */
	uint8_t reserved0[28];
	/* Line 1: guards the queue, the slow list, grants to others, steals, recovery. */
	struct syncmem_lock m;
	/* Line 2: under @m. */
	uint32_t qhead;		/* pending requests: req index + 1, FIFO */
	uint32_t qtail;
	uint32_t shead;		/* the slow list: shares granted under @m */
	uint32_t stail;
	uint32_t died;		/* an exclusive holder died: the next grant is told */
	uint32_t reserved1;
	uint64_t last_stamp;	/* stamps are unique and increasing per cell */
	uint8_t reserved2[32];
	/* Lines 3-6 */
	struct locks_slot slot[LOCKS_SLOTS];
	/* Lines 7-22 */
	uint8_t name[SYNCMEM_LOCKS_NAME_MAX];
} __attribute__((aligned(64)));

/* Values of struct locks_req.state. */
enum {
	REQ_FREE = 0,		/* on the free stack */
	REQ_CACHED = 1,		/* kept for its client's next request (anyone may take it) */
	REQ_TAKEN = 2,		/* a thread of its client uses it: not queued, nothing held */
	REQ_FAST = 3,		/* a fast path of its client is granting it */
	REQ_PENDING = 4,	/* queued */
	REQ_HELD = 5,
	REQ_STOLEN = 6,		/* held until a steal: its release says so */
	REQ_STATES
};

/* Bits of struct locks_req.flags. */
#define REQ_SHARED	0x1u
#define REQ_SLOW	0x2u	/* counted in the slow list */
#define REQ_DIED	0x4u	/* granted after an exclusive holder died */
#define REQ_PICKED	0x8u	/* its requester knows it holds it */
#define REQ_FLAGS	0xfu

struct locks_req {
	uint32_t state;		/* REQ_* */
	uint32_t flags;		/* REQ_SHARED ... */
	uint32_t cell;		/* cell index */
	uint32_t gen;		/* the cell's gen it was made for */
	uint64_t client;	/* its process's owner id */
	uint64_t stamp;		/* CLOCK_MONOTONIC ns: queued, then granted */
	uint64_t word;		/* a pending request sleeps on it: an owner word */
	uint32_t prev;		/* queue or slow list: req index + 1 */
	uint32_t next;
	uint32_t epoch;		/* the cell's epoch it was granted under */
	uint32_t seq;		/* bumped each time it is taken: handles compare it */
	uint32_t slot;		/* a fast share: the slot it counts in */
	uint32_t free_next;	/* on the free stack: index + 1 */
} __attribute__((aligned(64)));

/* The private handle on a manager: the geometry validated once. */
struct syncmem_locks {
	struct syncmem_region *r;
	struct locks_header *h;
	uint32_t *buckets;
	struct locks_cell *cells;
	struct locks_req *reqs;
	uint32_t max_names;
	uint32_t max_reqs;
	uint32_t mask;		/* nbuckets - 1 */
	uint32_t seed;
	uint64_t serial;	/* names this handle in per-thread caches */
	bool rdonly;
};

/* One granted lock, private to its holder. */
struct syncmem_held {
	struct syncmem_locks *m;
	uint64_t client;
	uint32_t req;
	uint32_t seq;
	uint32_t cell;
	uint32_t gen;
	uint32_t epoch;
	uint32_t slot;		/* a fast share's slot, else LOCKS_NO_SLOT */
	uint32_t flags;		/* REQ_SHARED, REQ_SLOW */
	struct syncmem_held *next_free;	/* in a thread's cache of free handles */
	/* &cells[cell] and &reqs[req], from checked indexes: the release needs no bounds check. */
	struct locks_cell *c;
	struct locks_req *r;
};

#define LOCKS_NO_SLOT	UINT32_MAX

/* ---- Between locks.c and its other files ---- */

/* A checked request: name, mode and the hash of the name. */
struct locks_ask {
	const void *name;
	uint32_t len;
	uint32_t hash;		/* valid once @hashed */
	bool hashed;
	unsigned flags;		/* SYNCMEM_LOCKS_* */
};

/* 0, or the errno of bad arguments (the handle, the name, the flags). */
static inline int syncmem__locks_check(struct syncmem_locks *m, const void *name, size_t len,
				       unsigned flags, struct locks_ask *a)
{
	if (!m || !name || !len)
		return -EINVAL;
	if (flags & ~(SYNCMEM_LOCKS_SHARED | SYNCMEM_LOCKS_IF_AVAILABLE | SYNCMEM_LOCKS_STEAL))
		return -EINVAL;
	if ((flags & SYNCMEM_LOCKS_STEAL) &&
	    (flags & (SYNCMEM_LOCKS_SHARED | SYNCMEM_LOCKS_IF_AVAILABLE)))
		return -EINVAL;
	if (len > SYNCMEM_LOCKS_NAME_MAX)
		return -ENAMETOOLONG;
	if (*(const char *)name == '-')
		return -EINVAL;
	if (m->rdonly)
		return -EBADF;
	a->name = name;
	a->len = (uint32_t)len;
	a->flags = flags;
	a->hash = 0;
	a->hashed = false;	/* the hash is computed when needed: a fast path hit needs none */
	return 0;
}

/*
 * Start a request without waiting: 1 granted (*@h set, *@died for
 * -EOWNERDEAD), 0 queued as req *@req (wait on its word), or -errno
 * (-EBUSY, -ETIMEDOUT with @now_only, -ENOSPC...). @now_only: IF_AVAILABLE
 * or a timeout of 0.
 */
int syncmem__locks_begin(struct syncmem_locks *m, struct locks_ask *a, bool now_only,
			 uint32_t *req, struct syncmem_held **h, bool *died);

/*
 * A queued request's state: 1 granted (*@h set, *@died), 0 still pending:
 * sleep on its word expecting *@expect (an owner word naming someone, the
 * waiters bit set), or -errno.
 */
int syncmem__locks_pending(struct syncmem_locks *m, uint32_t req, uint64_t *expect,
			   struct syncmem_held **h, bool *died);

/*
 * A wait on the word of pending req @req ended with @result (SYNCMEM_WAIT_*
 * or -errno) after expecting @expect: repair what a death left, under the
 * cell's mutex. 0 (look again) or -errno (@req was freed).
 */
int syncmem__locks_woken(struct syncmem_locks *m, uint32_t req, uint64_t expect, int result);

/*
 * Give up pending req @req with @err: 1 if it was granted meanwhile (*@h
 * set, *@died), else @err (it left the queue, the next request was
 * considered).
 */
int syncmem__locks_give_up(struct syncmem_locks *m, uint32_t req, int err,
			   struct syncmem_held **h, bool *died);

/* The fast path: 1 granted (*@h set), 0 take the slow path, or -errno. */
int syncmem__locks_fast(struct syncmem_locks *m, struct locks_ask *a,
			struct syncmem_held **h);

/*
 * Take pending req @req out of its queue (the next request is considered
 * at once) and wake its wait: 0, and the req is the caller's to drop once
 * that wait has ended; -ENOENT when it was granted already; -errno.
 */
int syncmem__locks_cancel(struct syncmem_locks *m, uint32_t req);

/* Give back req @req, the caller's, queued no more and holding nothing. */
void syncmem__locks_drop(struct syncmem_locks *m, uint32_t req);

/* This process's owner id for @m's calls, or -errno. */
int64_t syncmem__locks_me(struct syncmem_locks *m);

/* Free everything of the dead processes @dead (sorted, @nd of them) in @m. */
void syncmem__locks_forget(struct syncmem_locks *m, const uint64_t *dead, size_t nd);

/* The process id of a client or owner word as the manager names it (see locks.c). */
static inline uint64_t syncmem__locks_id(uint64_t id)
{
	return id && id < SYNCMEM_OWNER_NOBODY ? id : SYNCMEM_OWNER_GONE;
}

#endif /* SYNCMEM_LOCKS_H */
