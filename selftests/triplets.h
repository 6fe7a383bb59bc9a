/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The lock model's readers and writers over a bounded buffer, with gates
 * (used by gate_sem_test and the demo).
 *
 * Passing the baton: gate "entry" (open) admits one agent at a time to the
 * shared state; an agent that cannot go on (buffer full for a writer, empty
 * for a reader) counts itself waiting, passes the baton on by signalling
 * "entry" and waits on its own kind's gate. Whoever leaves the state
 * decides whom to signal, as its last statement: an agent of its own kind if
 * one waits and can proceed, else one of the other kind, else "entry". A
 * signal hands the gate to the oldest waiter, so exactly one agent holds
 * the baton at a time. Writers put triplets of one value into the ring one
 * value at a time (yielding in between); a reader takes three values and
 * checks that they are one writer's triplet.
 */
#ifndef SYNCMEM_TRIPLETS_H
#define SYNCMEM_TRIPLETS_H

#include <sched.h>
#include <stdint.h>

#include "syncmem.h"

#define TRIPLET_SLOTS	6	/* values in the ring: two triplets */

struct triplets {
	struct syncmem_gate entry, readers, writers;
	uint32_t waiting_readers, waiting_writers;	/* under the baton */
	uint32_t count;					/* values in the ring */
	uint32_t head, tail;
	uint32_t ring[TRIPLET_SLOTS];
	uint32_t bad_triplets;		/* reads that were not one triplet */
	uint32_t triplets_read;
};

static inline void triplets_init(struct triplets *t)
{
	*t = (struct triplets){ 0 };
	syncmem_gate_init(&t->entry, true);
	syncmem_gate_init(&t->readers, false);
	syncmem_gate_init(&t->writers, false);
}

/* Pass the baton on: the last statement of every visit. */
static inline int triplets_signal(struct syncmem_region *r, struct triplets *t, int writer)
{
	int writer_can = t->count + 3 <= TRIPLET_SLOTS && t->waiting_writers;
	int reader_can = t->count >= 3 && t->waiting_readers;

	if (writer ? writer_can : !reader_can && writer_can) {
		t->waiting_writers--;
		return syncmem_gate_signal(r, &t->writers);
	}
	if (reader_can) {
		t->waiting_readers--;
		return syncmem_gate_signal(r, &t->readers);
	}
	return syncmem_gate_signal(r, &t->entry);
}

static inline int triplets_write(struct syncmem_region *r, struct triplets *t, uint32_t value)
{
	int ret = syncmem_gate_wait(r, &t->entry, SYNCMEM_FOREVER);

	if (ret)
		return ret;
	if (t->count + 3 > TRIPLET_SLOTS) {
		t->waiting_writers++;
		ret = syncmem_gate_signal(r, &t->entry);
		if (ret < 0)
			return ret;
		ret = syncmem_gate_wait(r, &t->writers, SYNCMEM_FOREVER);
		if (ret)
			return ret;
	}
	for (int i = 0; i < 3; i++) {
		t->ring[t->tail] = value;
		t->tail = (t->tail + 1) % TRIPLET_SLOTS;
		t->count++;
		sched_yield();
	}
	ret = triplets_signal(r, t, 1);
	return ret < 0 ? ret : 0;
}

static inline int triplets_read(struct syncmem_region *r, struct triplets *t)
{
	uint32_t v[3];
	int ret = syncmem_gate_wait(r, &t->entry, SYNCMEM_FOREVER);

	if (ret)
		return ret;
	if (t->count < 3) {
		t->waiting_readers++;
		ret = syncmem_gate_signal(r, &t->entry);
		if (ret < 0)
			return ret;
		ret = syncmem_gate_wait(r, &t->readers, SYNCMEM_FOREVER);
		if (ret)
			return ret;
	}
	for (int i = 0; i < 3; i++) {
		v[i] = t->ring[t->head];
		t->head = (t->head + 1) % TRIPLET_SLOTS;
		t->count--;
		sched_yield();
	}
	if (v[0] != v[1] || v[1] != v[2])
		t->bad_triplets++;
	t->triplets_read++;
	ret = triplets_signal(r, t, 0);
	return ret < 0 ? ret : 0;
}

#endif /* SYNCMEM_TRIPLETS_H */
