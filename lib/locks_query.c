// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * syncmem_locks_query(): what a Web Locks manager holds and who waits.
 *
 * One scan of the reqs, with no lock: a held req counts if its cell still
 * has the name it was granted for and has not been stolen since (its epoch
 * is the cell's; an exclusive one is the req in @excl), a pending one if
 * its cell still has its name. The kernel says, once per process found,
 * whether it lives and which pid it has in the caller's namespace (WHO on
 * the req's client word); the holds and requests of dead processes are
 * left out and, on a writable region, freed. Entries come out by stamp:
 * grants and queueing are stamped under the cell's mutex with increasing
 * times, so held locks are in grant order and each name's pending
 * requests in queue order. A name is copied, then its req and cell checked
 * again: an entry that changed meanwhile is left out.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "locks.h"

#define LD(p)	__atomic_load_n((p), __ATOMIC_RELAXED)
#define LDA(p)	__atomic_load_n((p), __ATOMIC_ACQUIRE)

struct qent {
	uint64_t stamp;
	uint64_t client;
	uint32_t req;
	uint32_t seq;
	uint32_t cell;
	uint32_t gen;
	uint32_t state;
	uint32_t flags;
	int32_t pid;
	bool dead;
};

struct qclient {
	uint64_t id;
	int32_t pid;
	bool dead;
};

static int stamp_cmp(const void *a, const void *b)
{
	const struct qent *x = a, *y = b;

	if (x->stamp != y->stamp)
		return x->stamp < y->stamp ? -1 : 1;
	return x->req < y->req ? -1 : x->req > y->req;
}

static int client_cmp(const void *a, const void *b)
{
	const struct qclient *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static int id_cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Is req @i, read into @e, a current hold or request? */
static bool entry_of(struct syncmem_locks *m, uint32_t i, struct qent *e)
{
	struct locks_req *r = &m->reqs[i];
	struct locks_cell *c;
	uint64_t x;

	e->state = LDA(&r->state);
	if (e->state != REQ_HELD && e->state != REQ_PENDING)
		return false;
	e->req = i;
	e->seq = LD(&r->seq);
	e->cell = LD(&r->cell);
	e->gen = LD(&r->gen);
	e->flags = LD(&r->flags);
	e->client = syncmem__locks_id(LD(&r->client));
	e->stamp = LD(&r->stamp);
	if (e->cell >= m->max_names)
		return false;
	c = &m->cells[e->cell];
	if (LDA(&c->gen) != e->gen || (e->gen & 1) || LD(&c->len) > SYNCMEM_LOCKS_NAME_MAX)
		return false;
	if (e->state == REQ_HELD) {
		x = LD(&c->excl);
		if ((uint32_t)(x >> 32) != LD(&r->epoch))
			return false;	/* stolen since */
		if (!(e->flags & REQ_SHARED) && (uint32_t)x != i + 1)
			return false;
	}
	/* Read again: the fields above belong to this state. */
	return LDA(&r->state) == e->state && LD(&r->seq) == e->seq;
}

/* The liveness and pid of each distinct client of @e: 0 or -errno. */
static int clients_of(struct syncmem_locks *m, struct qent *e, size_t n, struct qclient **out,
		      size_t *nout)
{
	struct qclient *cl = malloc(sizeof(*cl) * (n ? n : 1));
	size_t k = 0;

	if (!cl)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		struct syncmem_holder_info who;
		struct qclient key = { .id = e[i].client };

		if (k && bsearch(&key, cl, k, sizeof(*cl), client_cmp))
			continue;
		/* The req's client word names it: the kernel reads it, alive or not, and its pid. */
		if (syncmem_holder(m->r, &m->reqs[e[i].req].client, &who) ||
		    (who.word & SYNCMEM_OWNER_ID) != e[i].client) {
			int alive = syncmem__owner_alive(m->r->fd, e[i].client);

			who.state = alive > 0 ? SYNCMEM_HOLDER_ALIVE : SYNCMEM_HOLDER_DEAD;
			who.pid = 0;
			if (alive < 0 && e[i].client != SYNCMEM_OWNER_GONE) {
				free(cl);
				return alive;
			}
		}
		/* Kept sorted: insertion, the clients are few next to the reqs. */
		{
			size_t at = k;

			while (at && cl[at - 1].id > key.id) {
				cl[at] = cl[at - 1];
				at--;
			}
			cl[at] = (struct qclient){ .id = key.id, .pid = who.pid,
						   .dead = who.state != SYNCMEM_HOLDER_ALIVE };
			k++;
		}
	}
	*out = cl;
	*nout = k;
	return 0;
}

/*
 * Copy entry @e into @info: 0, or -EAGAIN when the req or its cell changed
 * while the name was copied (the entry is then left out).
 */
static int entry_copy(struct syncmem_locks *m, const struct qent *e, uint64_t now,
		      struct syncmem_lock_info *info)
{
	struct locks_cell *c = &m->cells[e->cell];
	const uint64_t *w = (const uint64_t *)c->name;
	uint32_t len = LD(&c->len);

	if (len > SYNCMEM_LOCKS_NAME_MAX)
		return -EAGAIN;
	memset(info, 0, sizeof(*info));
	info->mode = e->flags & REQ_SHARED ? SYNCMEM_LOCKS_SHARED : 0;
	info->pid = e->pid;
	info->client = e->client;
	info->len = len;
	/* A fast grant's stamp is extrapolated (locks.c): never after the query. */
	info->since_ns = (int64_t)(e->stamp < now ? e->stamp : now);
	for (uint32_t i = 0; i * 8 < len; i++) {
		uint64_t x = LDA(&w[i]);

		memcpy(info->name + i * 8, &x, len - i * 8 < 8 ? len - i * 8 : 8);
	}
	if (LDA(&c->gen) != e->gen || LDA(&m->reqs[e->req].state) != e->state ||
	    LD(&m->reqs[e->req].seq) != e->seq)
		return -EAGAIN;
	return 0;
}

/* Write the entries of @state from @e into @out (capacity *@cap): *@cap their number. */
static void entries_out(struct syncmem_locks *m, const struct qent *e, size_t n, uint32_t state,
			uint64_t now, struct syncmem_lock_info *out, size_t *cap)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++) {
		if (e[i].state != state || e[i].dead)
			continue;
		if (k < *cap && entry_copy(m, &e[i], now, &out[k]))
			continue;
		k++;
	}
	*cap = k;
}

int syncmem_locks_query(struct syncmem_locks *m, struct syncmem_lock_info *held,
			size_t *nheld, struct syncmem_lock_info *pending, size_t *npending)
{
	struct qclient *cl = NULL;
	struct timespec ts;
	struct qent *e;
	size_t n = 0, ncl = 0, nd = 0;
	uint64_t *dead, now;
	int err;

	if (!m || !nheld || !npending || (*nheld && !held) || (*npending && !pending))
		return -EINVAL;
	e = malloc(sizeof(*e) * m->max_reqs);
	if (!e)
		return -ENOMEM;
	for (uint32_t i = 0; i < m->max_reqs; i++)
		if (entry_of(m, i, &e[n]))
			n++;
	err = clients_of(m, e, n, &cl, &ncl);
	if (err) {
		free(e);
		return err;
	}
	dead = malloc(sizeof(*dead) * (ncl ? ncl : 1));
	if (!dead) {
		free(cl);
		free(e);
		return -ENOMEM;
	}
	for (size_t i = 0; i < ncl; i++)
		if (cl[i].dead)
			dead[nd++] = cl[i].id;
	qsort(dead, nd, sizeof(*dead), id_cmp);
	for (size_t i = 0; i < n; i++) {
		struct qclient key = { .id = e[i].client };
		const struct qclient *c = bsearch(&key, cl, ncl, sizeof(*cl), client_cmp);

		e[i].pid = c ? c->pid : 0;
		e[i].dead = !c || c->dead;
	}
	/* Left out now, freed for the next caller. */
	if (nd && !m->rdonly)
		syncmem__locks_forget(m, dead, nd);
	qsort(e, n, sizeof(*e), stamp_cmp);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	now = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	entries_out(m, e, n, REQ_HELD, now, held, nheld);
	entries_out(m, e, n, REQ_PENDING, now, pending, npending);
	free(dead);
	free(cl);
	free(e);
	return 0;
}
