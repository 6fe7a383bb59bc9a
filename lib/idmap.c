// SPDX-License-Identifier: LGPL-2.1-or-later
/* The id -> callback map of the event loop (see idmap.h). */
#include <errno.h>
#include <stdlib.h>

#include "idmap.h"

static size_t slot_of(const struct idmap *m, uint64_t id)
{
	/* Ids are sequential: a multiplicative hash spreads them. */
	return (size_t)((id * 0x9e3779b97f4a7c15ULL) >> 17) & (m->cap - 1);
}

static void place(struct idmap *m, const struct idmap_entry *e)
{
	size_t i = slot_of(m, e->id);

	while (m->slots[i].id)
		i = (i + 1) & (m->cap - 1);
	m->slots[i] = *e;
}

int syncmem__idmap_reserve(struct idmap *m)
{
	struct idmap_entry *old = m->slots;
	size_t old_cap = m->cap, i;

	if ((m->count + 1) * 2 <= m->cap)
		return 0;
	m->cap = old_cap ? old_cap * 2 : 64;
	m->slots = calloc(m->cap, sizeof(*m->slots));
	if (!m->slots) {
		m->slots = old;
		m->cap = old_cap;
		return -ENOMEM;
	}
	for (i = 0; i < old_cap; i++)
		if (old[i].id)
			place(m, &old[i]);
	free(old);
	return 0;
}

void syncmem__idmap_insert(struct idmap *m, const struct idmap_entry *e)
{
	place(m, e);
	m->count++;
}

static size_t find(const struct idmap *m, uint64_t id)
{
	size_t i;

	if (!m->cap || !id)
		return SIZE_MAX;
	for (i = slot_of(m, id); m->slots[i].id; i = (i + 1) & (m->cap - 1))
		if (m->slots[i].id == id)
			return i;
	return SIZE_MAX;
}

bool syncmem__idmap_contains(const struct idmap *m, uint64_t id)
{
	return find(m, id) != SIZE_MAX;
}

const struct idmap_entry *syncmem__idmap_get(const struct idmap *m, uint64_t id)
{
	size_t i = find(m, id);

	return i == SIZE_MAX ? NULL : &m->slots[i];
}

void *syncmem__idmap_arg(const struct idmap *m, uint64_t id)
{
	size_t i = find(m, id);

	return i == SIZE_MAX ? NULL : m->slots[i].arg;
}

/* Empty slot @i and shift later members of its probe run back into it. */
static void erase(struct idmap *m, size_t i)
{
	size_t mask = m->cap - 1, j = i;

	for (;;) {
		size_t home;

		j = (j + 1) & mask;
		if (!m->slots[j].id)
			break;
		home = slot_of(m, m->slots[j].id);
		/* Move j back to i unless its home lies cyclically in (i, j]. */
		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->slots[i] = m->slots[j];
			i = j;
		}
	}
	m->slots[i].id = 0;
	m->count--;
}

bool syncmem__idmap_remove(struct idmap *m, uint64_t id, struct idmap_entry *out)
{
	size_t i = find(m, id);

	if (i == SIZE_MAX)
		return false;
	if (out)
		*out = m->slots[i];
	erase(m, i);
	return true;
}

bool syncmem__idmap_pop(struct idmap *m, struct idmap_entry *out)
{
	for (size_t i = 0; i < m->cap && m->count; i++) {
		if (m->slots[i].id) {
			*out = m->slots[i];
			erase(m, i);
			return true;
		}
	}
	return false;
}

void syncmem__idmap_free(struct idmap *m)
{
	free(m->slots);
	m->slots = NULL;
	m->cap = m->count = 0;
}
