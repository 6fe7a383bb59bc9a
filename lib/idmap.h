/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A map from non-zero 64-bit ids to callbacks: open addressing with linear
 * probing and backward-shift deletion, kept at most half full.
 */
#ifndef SYNCMEM_IDMAP_H
#define SYNCMEM_IDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct idmap_entry {
	uint64_t id;		/* 0: empty */
	void (*cb)(void *arg, int result);
	void *arg;
	bool raw;		/* cb wants the kernel's SYNCMEM_WAIT_* result */
	bool ring;		/* a loop's wait whose end is a CQE of its ring */
};

struct idmap {
	struct idmap_entry *slots;
	size_t cap;		/* a power of two, or 0 */
	size_t count;
};

/* Make room for one more entry; -ENOMEM if that fails. */
int syncmem__idmap_reserve(struct idmap *m);
/* Insert @e (its id not present); needs a successful syncmem__idmap_reserve(). */
void syncmem__idmap_insert(struct idmap *m, const struct idmap_entry *e);
/* Remove @id, copying it to @out; false if absent. */
bool syncmem__idmap_remove(struct idmap *m, uint64_t id, struct idmap_entry *out);
bool syncmem__idmap_contains(const struct idmap *m, uint64_t id);
/* @id's entry (valid until the map changes), or NULL if absent. */
const struct idmap_entry *syncmem__idmap_get(const struct idmap *m, uint64_t id);
/* The arg of @id's entry, or NULL if absent. */
void *syncmem__idmap_arg(const struct idmap *m, uint64_t id);
/* Remove any one entry into @out; false when empty. */
bool syncmem__idmap_pop(struct idmap *m, struct idmap_entry *out);
void syncmem__idmap_free(struct idmap *m);

#endif /* SYNCMEM_IDMAP_H */
